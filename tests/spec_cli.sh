#!/usr/bin/env bash
# The spec command: exit codes, the resolved numbers of a test app, JSON that
# parses, and the file:line messages of a missing or malformed spec.
set -u
bin=$1 data=$2
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # description, then a command whose success is the assertion
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
status() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

check "spec --help exits 0"        [ "$(status "$bin" spec --help)" = 0 ]
check "spec --help has usage"      grep -q "^usage: kernelsmith-cc spec" "$tmp/out"
check "help spec works"            [ "$(status "$bin" help spec)" = 0 ]
check "--help lists spec"          bash -c "'$bin' --help | grep -q '^  spec'"
check "no kernel is a usage error" [ "$(status "$bin" spec)" = 2 ]
check "bad option exits 2"         [ "$(status "$bin" spec --frob saxpy_kernel)" = 2 ]

check "saxpy exits 0"              [ "$(status "$bin" spec --no-compdb saxpy_kernel "$data/apps/saxpy")" = 0 ]
check "saxpy's spec is shown"      grep -q "^  inout y\[n\] uniform(-1, 1) tol(atol=1e-06, rtol=1e-06)" "$tmp/out"
check "saxpy's launch resolved"    grep -q "grid (262144, 1, 1)  block (256, 1, 1)  smem 0   (launch site saxpy.cu:" "$tmp/out"
check "saxpy's bytes"              grep -q "bytes_min 805306368  flops 134217728" "$tmp/out"
check "every size resolved"        [ "$(grep -c '^size ' "$tmp/out")" = 4 ]

check "--json exits 0"             [ "$(status "$bin" spec --json --no-compdb reduce_sum_kernel "$data/apps/reduce_sum")" = 0 ]
check "--json parses"              python3 -c "
import json,sys
d=json.load(open('$tmp/out'))
w=d['workloads'][0]
ok = (d['schema']=='kernelsmith-cc.spec' and d['version']==1 and len(d['workloads'])==4
      and d['spec']['instance']=='256' and w['launch']['block']==[256,1,1]
      and w['launch']['from']=='spec' and w['args'][1]['role']=='inout' and w['args'][1]['count']==1)
sys.exit(0 if ok else 1)"

check "unknown kernel exits 1"     [ "$(status "$bin" spec --no-compdb nokernel "$data/apps/saxpy")" = 1 ]
check "unknown kernel is named"    grep -q "no kernel 'nokernel'" "$tmp/err"

mkdir -p "$tmp/t"
printf '__global__ void k(float *x, int n) { x[0] = n; }\n' >"$tmp/t/t.cu"
check "no spec exits 1"            [ "$(status "$bin" spec --no-compdb k "$tmp/t")" = 1 ]
check "no spec is said"            grep -q "has no spec" "$tmp/err"
printf '// kernelsmith: size timed: n = 10\n//   inout x[n] gauss(0, 1)\n__global__ void k(float *x, int n) { x[0] = n; }\n' >"$tmp/t/t.cu"
check "malformed spec exits 1"     [ "$(status "$bin" spec --no-compdb k "$tmp/t")" = 1 ]
check "malformed spec: file:line"  grep -q "t.cu:2: buffer 'x': unknown distribution 'gauss'" "$tmp/err"
printf '// kernelsmith: size timed: n = 10\n//   inout x[n / 0]\n__global__ void k(float *x, int n) { x[0] = n; }\nvoid h(float *x, int n) { k<<<1, 1>>>(x, n); }\n' >"$tmp/t/t.cu"
check "unresolvable size exits 1"  [ "$(status "$bin" spec --no-compdb k "$tmp/t")" = 1 ]
check "and names the size"         grep -q "t.cu:2: size 'timed': buffer 'x': length 'n / 0': division by zero at column 3" "$tmp/err"

# Sources as the compiler reads them: a byte-order mark before a line-1
# annotation; a NUL byte in an annotation is refused with the file and line.
printf '\xef\xbb\xbf// kernelsmith: size timed: n = 10\n//   inout x[n]\n//   launch grid = 1, block = 1\n__global__ void k(float *x, int n) { x[0] = n; }\n' >"$tmp/t/t.cu"
check "BOM: the spec is found"     [ "$(status "$bin" spec --no-compdb k "$tmp/t")" = 0 ]
check "BOM: and resolved"          grep -q "^  inout x\[n\]" "$tmp/out"
printf '// kernelsmith: size timed: n = 10\r//   inout x[n]\r//   launch grid = 1, block = 1\r__global__ void k(float *x, int n) { x[0] = n; }\r' >"$tmp/t/t.cu"
check "CR endings: found"          [ "$(status "$bin" spec --no-compdb k "$tmp/t")" = 0 ]
printf '// kernelsmith: size timed: n = 10\n//   inout x[n]\0\n__global__ void k(float *x, int n) { x[0] = n; }\n' >"$tmp/t/t.cu"
check "NUL: exit 1"                [ "$(status "$bin" spec --no-compdb k "$tmp/t")" = 1 ]
check "NUL: file and line"         grep -q "t.cu:2: a NUL byte (at byte 50) in the spec" "$tmp/err"
# Values a float cannot hold, and an instance for a kernel that is no template.
printf '// kernelsmith: size timed: n = 10\n//   inout x[n] uniform(-1e300, 1e300)\n//   launch grid = 1, block = 1\n__global__ void k(float *x, int n) { x[0] = n; }\n' >"$tmp/t/t.cu"
check "f32 range: exit 1"          [ "$(status "$bin" spec --no-compdb k "$tmp/t")" = 1 ]
check "f32 range: file:line"       grep -q "t.cu:2: size 'timed': buffer 'x': values from .* do not fit f32" "$tmp/err"
printf '// kernelsmith: size timed: n = 10\n//   inout x[n]\n//   instance float\n__global__ void k(float *x, int n) { x[0] = n; }\n' >"$tmp/t/t.cu"
check "instance: exit 1"           [ "$(status "$bin" spec --no-compdb k "$tmp/t")" = 1 ]
check "instance: file:line"        grep -q "t.cu:1: instance: k is not a template" "$tmp/err"

echo "spec_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
