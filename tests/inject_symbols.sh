#!/usr/bin/env bash
# The injection library is loaded into users' programs: it must export
# InitializeInjection and nothing else, find CUPTI on its own (RUNPATH, no
# empty entry, which would mean the current directory) and need nothing of
# ours.
set -u
lib=$1
fail=0
syms=$(nm -D --defined-only "$lib" | awk 'NF == 3 { print $3 }' | sort)
if [ "$syms" != "InitializeInjection" ]; then
  echo "FAIL: exported symbols are not exactly InitializeInjection:"
  echo "$syms"
  fail=1
fi
runpath=$(readelf -d "$lib" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
if [ -z "$runpath" ]; then
  echo "FAIL: no RUNPATH"
  fail=1
elif [[ ":$runpath:" == *"::"* ]]; then
  echo "FAIL: RUNPATH '$runpath' has an empty entry"
  fail=1
fi
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if ! grep -q '^libcupti\.so' <<<"$needed"; then
  echo "FAIL: libcupti is not a NEEDED library: $needed"
  fail=1
fi
if grep -Evq '^(libcupti\.so.*|libc\.so\.6|libpthread\.so\.0|ld-linux-x86-64\.so\.2|libdl\.so\.2)$' <<<"$needed"; then
  echo "FAIL: unexpected NEEDED libraries:"
  echo "$needed"
  fail=1
fi
# Resolvable without LD_LIBRARY_PATH.
if env -u LD_LIBRARY_PATH ldd "$lib" | grep -q 'not found'; then
  echo "FAIL: unresolved libraries:"
  env -u LD_LIBRARY_PATH ldd "$lib"
  fail=1
fi
[ $fail = 0 ] && echo "inject_symbols: OK ($syms; RUNPATH $runpath)"
exit $fail
