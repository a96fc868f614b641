#!/usr/bin/env bash
# The compiler launcher without a GPU (needs nvcc; skipped without one): a
# stand-in search of saxpy whose run is marked as judged on sm_90 (a test
# fixture, as in apply_cli.sh), then `kernelsmith-cc nvcc ...` and
# `kernelsmith-cc /path/to/nvcc ...`: the rewritten copy, in the store, is
# compiled instead and the sources stay untouched (nothing written there); diagnostics point at the
# original file and line; another architecture, a file without winners and
# a non-CUDA compile pass through (a C object byte-identical to the plain
# compiler's); a broken store falls back to the plain compile with a
# warning; the user's own compile error gives the compiler's exit code;
# `stats` counts it all; and a CMake build with CMAKE_CUDA_COMPILER_LAUNCHER
# gets the variant with its sources untouched.
# usage: launcher_cli.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1")
data=$(realpath "$2")
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || { echo "launcher_cli: no nvcc at $nvcc; skipped"; exit 77; }
. "$(dirname "$0")/check.sh"
repo=$tmp/repo
mkdir -p "$repo" "$tmp/b"
cp -r "$data/apps/saxpy" "$data/apps/gelu" "$data/apps/common" "$repo/"
(cd "$repo" && git init -q . && git add -A && git -c user.email=t@t -c user.name=t commit -qm apps)
(cd "$repo" && "$bin" -q optimize --stand-in-judge --rounds 3 -k saxpy_kernel . >/dev/null 2>&1)
mark_sm90 "$repo/.kernelsmith"
cc() { (cd "$repo/saxpy" && "$bin" "$@"); }
# Where the launcher puts the rewritten copy of the compile whose output is
# $1: the store's build/<first 16 hex digits of sha256(OUTPUT.ks.cu)>/.
copy_of() {
  local d b
  d=$(realpath "$(dirname "$1")") b=$(basename "$1").ks.cu
  echo "$repo/.kernelsmith/build/$(printf %s "$d/$b" | sha256sum | cut -c1-16)/$b"
}

cc "$nvcc" -std=c++17 -arch=sm_90 -c saxpy.cu -o "$tmp/b/saxpy.o" 2>"$tmp/e1"
check "rewritten compile: exit 0" [ $? -eq 0 ]
check "the copy is in the store" test -f "$(copy_of "$tmp/b/saxpy.o")"
check "... with the dispatch" grep -q "static ksrt::site ks_site(\"saxpy_kernel\"" "$(copy_of "$tmp/b/saxpy.o")"
check "... and #line to the original" grep -q "^#line [0-9]* \"$repo/saxpy/saxpy.cu\"" "$(copy_of "$tmp/b/saxpy.o")"
check "the object holds the variant" sh -c "/usr/local/cuda/bin/cuobjdump -symbols '$tmp/b/saxpy.o' 2>/dev/null | grep -q saxpy_kernel_ks || nm -C '$tmp/b/saxpy.o' | grep -q saxpy_kernel_ks"
check "sources untouched" test -z "$(cd "$repo" && git status --porcelain --untracked-files=no)"

# A program built in one command (compile and link, as tune's examples and
# many Makefiles do): the copy beside the program, the program runs the
# variant's code; without -o, nvcc's names (saxpy.o, a.out) are kept.
cc "$nvcc" -std=c++17 -arch=sm_90 -o "$tmp/b/prog" saxpy.cu 2>"$tmp/e1l"
check "compile and link in one command: exit 0" [ $? -eq 0 ]
check "... the copy in the store" grep -q "static ksrt::site ks_site(\"saxpy_kernel\"" "$(copy_of "$tmp/b/prog")"
check "... the program holds the variant" sh -c "nm -C '$tmp/b/prog' | grep -q saxpy_kernel_ks"
(cd "$repo/saxpy" && rm -f saxpy.o a.out && "$bin" "$nvcc" -std=c++17 -arch=sm_90 -c saxpy.cu && "$bin" "$nvcc" -std=c++17 -arch=sm_90 saxpy.cu)
check "... without -o: saxpy.o and a.out, as nvcc names them" sh -c "[ -f '$repo/saxpy/saxpy.o' ] && [ -x '$repo/saxpy/a.out' ] && nm -C '$repo/saxpy/a.out' | grep -q saxpy_kernel_ks"
check "... and nothing else in the source tree (a build there)" test -z "$(cd "$repo" && git status --porcelain -uall -- saxpy | grep -v '^?? saxpy/\(saxpy\.o\|a\.out\)$')"
rm -f "$repo/saxpy/saxpy.o" "$repo/saxpy/a.out"
(cd "$repo" && "$bin" "$nvcc" -std=c++17 -arch=sm_90 -ptx saxpy/saxpy.cu -o "$tmp/b/s.ptx")
check "-ptx: passed through" sh -c "[ -f '$tmp/b/s.ptx' ] && [ ! -e '$(copy_of "$tmp/b/s.ptx")' ]"

# Diagnostics: a #warning at the end of the file is reported at its own line.
cp "$repo/saxpy/saxpy.cu" "$tmp/saxpy.orig"
echo '#warning "kernelsmith line check"' >>"$repo/saxpy/saxpy.cu"
line=$(wc -l <"$repo/saxpy/saxpy.cu")
rewritten=$(grep -c "	rewritten	" "$repo/.kernelsmith/launcher.log")
cc nvcc -std=c++17 -arch=sm_90 -c saxpy.cu -o "$tmp/b/w.o" 2>"$tmp/e2"
check "diagnostics point at the original file and line" grep -q "saxpy/saxpy.cu($line)\|saxpy/saxpy.cu:$line" "$tmp/e2"
check "... of the rewritten compile" [ "$(grep -c "	rewritten	" "$repo/.kernelsmith/launcher.log")" -eq $((rewritten + 1)) ]
cp "$tmp/saxpy.orig" "$repo/saxpy/saxpy.cu"

cc "$nvcc" -std=c++17 -arch=sm_80 -c saxpy.cu -o "$tmp/b/s80.o"
check "another architecture: compiled" [ $? -eq 0 ]
check "... passed through" test ! -e "$(copy_of "$tmp/b/s80.o")"
cc "$nvcc" -std=c++17 -arch=all-major -c saxpy.cu -o "$tmp/b/major.o"
check "-arch=all-major (sm_90 among them): rewritten" grep -q "saxpy_kernel_ks" "$(copy_of "$tmp/b/major.o")"
if ! nvidia-smi -L >/dev/null 2>&1; then
  cc "$nvcc" -std=c++17 -arch=native -c saxpy.cu -o "$tmp/b/native.o" 2>/dev/null
  check "-arch=native without a GPU to say what it means: passed through" test ! -e "$(copy_of "$tmp/b/native.o")"
fi
(cd "$repo/gelu" && "$bin" "$nvcc" -std=c++17 -arch=sm_90 -c gelu.cu -o "$tmp/b/gelu.o")
check "a file without winners: compiled, passed through" sh -c "[ -f '$tmp/b/gelu.o' ] && [ ! -e '$(copy_of "$tmp/b/gelu.o")' ]"

printf 'int f(int x) { return 2 * x; }\n' >"$tmp/f.c"
(cd "$tmp" && gcc -O2 -c f.c -o f1.o && "$bin" "$(command -v gcc)" -O2 -c f.c -o f2.o)
check "a C compile passes through, byte-identical" cmp -s "$tmp/f1.o" "$tmp/f2.o"

# The winner files are an export: an edited one changes nothing, the store
# is what the launcher reads.
cp "$repo/.kernelsmith/winners/saxpy_kernel.cu" "$tmp/w.cu"
echo '/* kernelsmith-variant: launch grid = */' >"$repo/.kernelsmith/winners/saxpy_kernel.cu"
cc "$nvcc" -std=c++17 -arch=sm_90 -c saxpy.cu -o "$tmp/b/fw.o" 2>"$tmp/e3w"
check "a broken winner file: still rewritten from the store" grep -q "ks_site.take(" "$(copy_of "$tmp/b/fw.o")"
check "... no warning" test ! -s "$tmp/e3w"
cp "$tmp/w.cu" "$repo/.kernelsmith/winners/saxpy_kernel.cu"
# A store edited by hand (a variant that no longer matches its hash): a
# warning that says why, and the plain compile.
cp "$repo/.kernelsmith/kernelsmith.db" "$tmp/db.bak"
python3 - "$repo/.kernelsmith/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE variants SET source = source || ' __device__ int ks_edited;' WHERE id IN (SELECT winner FROM kernels)")
db.commit()
PY
cc "$nvcc" -std=c++17 -arch=sm_90 -c saxpy.cu -o "$tmp/b/fb.o" 2>"$tmp/e3"
check "a problem inside the tool: exit 0" [ $? -eq 0 ]
check "... one warning, with the reason" grep -q "compiled as written: .*does not match its hash" "$tmp/e3"
check "... no copy" test ! -e "$(copy_of "$tmp/b/fb.o")"
cp "$tmp/db.bak" "$repo/.kernelsmith/kernelsmith.db"
rm -f "$repo/.kernelsmith/kernelsmith.db-wal" "$repo/.kernelsmith/kernelsmith.db-shm"

# The user's own error: the compiler's exit code.
echo 'void broken( {' >>"$repo/saxpy/saxpy.cu"
cc "$nvcc" -std=c++17 -arch=sm_90 -c saxpy.cu -o "$tmp/b/err.o" 2>"$tmp/e4"
rc=$?
"$nvcc" -std=c++17 -arch=sm_90 -c "$repo/saxpy/saxpy.cu" -o "$tmp/b/err2.o" 2>/dev/null
check "a compile error: the compiler's exit code" [ $rc -eq $? ] && [ $rc -ne 0 ]
cp "$tmp/saxpy.orig" "$repo/saxpy/saxpy.cu"

"$bin" stats --store "$repo/.kernelsmith" >"$tmp/stats"
check "stats: rewritten, passed, fell back" grep -q "rewritten [1-9][0-9]*, passed through [1-9][0-9]*, fell back [1-9]" "$tmp/stats"

# Chained with ccache (CMake's "kernelsmith-cc;ccache"): the launcher runs
# ccache on the rewritten copy.
if command -v ccache >/dev/null; then
  CCACHE_DIR=$tmp/ccache cc ccache "$nvcc" -std=c++17 -arch=sm_90 -c saxpy.cu -o "$tmp/b/cc.o"
  check "through ccache: compiled" [ $? -eq 0 ]
  check "... the rewritten copy" grep -q "saxpy_kernel_ks" "$(copy_of "$tmp/b/cc.o")"
  CCACHE_DIR=$tmp/ccache cc ccache "$nvcc" -std=c++17 -arch=sm_90 -c saxpy.cu -o "$tmp/b/cc2.o"
  check "... and again (a cache hit is fine)" [ -f "$tmp/b/cc2.o" ]
fi

# CMake with the launcher.
if command -v cmake >/dev/null; then
  cat >"$repo/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.18)
project(launch_test LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 90)
add_executable(saxpy saxpy/saxpy.cu)
CM
  (cd "$tmp" && CUDACXX="$nvcc" cmake -S "$repo" -B cm -DCMAKE_CUDA_COMPILER_LAUNCHER="$bin" >"$tmp/cm.log" 2>&1 &&
   cmake --build cm >>"$tmp/cm.log" 2>&1)
  check "CMake build with the launcher" [ $? -eq 0 ]
  check "... compiled the rewritten copy" test -f "$(copy_of "$tmp/cm/CMakeFiles/saxpy.dir/saxpy/saxpy.cu.o")"
  rm -f "$repo/CMakeLists.txt"
  check "... sources untouched" test -z "$(cd "$repo" && git status --porcelain --untracked-files=no)"
fi

echo "launcher_cli: $fails failed"
exit $((fails > 0))
