#!/usr/bin/env bash
# apply and the compiler launcher on launches through a function pointer
# (testdata/drivers/pick: a benchmark driver that picks its kernel through
# `kernel = &scale_elems; ... kernel<<<grid, threads>>>(...)`), without a
# GPU: a stand-in search's winners (the run marked as judged on sm_90, a
# test fixture), then: one dispatch per candidate kernel at the one launch,
# the original launch as the last branch; the patched file compiles with
# nvcc (where installed); the launcher's copy dispatches the same; a
# winner whose only launch goes through a pointer passed in as a parameter
# is not added, and a line says why.
# usage: apply_pointer.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1")
data=$(realpath "$2")
. "$(dirname "$0")/check.sh"
repo=$tmp/repo
mkdir -p "$repo"
cp -r "$data/drivers/pick/." "$repo/"
(cd "$repo" && git init -q . && git add -A && git -c user.email=t@t -c user.name=t commit -qm pick)
(cd "$repo" && "$bin" -q optimize --stand-in-judge --rounds 2 . >"$tmp/opt.out" 2>&1)
check "stand-in search made both winners" test "$(ls "$repo/.kernelsmith/winners" | wc -l)" -eq 2
mark_sm90 "$repo/.kernelsmith"

(cd "$repo" && "$bin" apply >"$tmp/patch" 2>"$tmp/apply.err")
check "apply: exit 0" [ $? -eq 0 ]
check "... nothing left as written" [ ! -s "$tmp/apply.err" ]
check "... the pointer compared with the first kernel" grep -qF "+    (kernel == (decltype(kernel))&scale_elems" "$tmp/patch"
check "... then with the second" grep -qF "+     : (kernel == (decltype(kernel))&offset_elems" "$tmp/patch"
check "... the launch as written last" grep -qF "+     : kernel<<<grid, threads>>>(d_dst, d_src, 3.0f, N_ELEMS)));" "$tmp/patch"
check "... one site per kernel" [ "$(grep -c 'static ksrt::site ks_site("\(scale\|offset\)_elems", "pick.cu:' "$tmp/patch")" -eq 2 ]
check "... both variants added" [ "$(grep -c '^+__global__ void .*_ks(' "$tmp/patch")" -eq 2 ]
(cd "$repo" && "$bin" apply --write . >"$tmp/write.out" 2>&1)
check "... says what it added" grep -q "patched pick.cu: 2 variants, 2 launch sites dispatched" "$tmp/write.out"
check "apply --write" grep -qF "(kernel == (decltype(kernel))&scale_elems" "$repo/pick.cu"
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
if [ -x "$nvcc" ]; then
  (cd "$repo" && "$nvcc" -std=c++17 -arch=sm_90 -c pick.cu -o pick.o >"$tmp/nvcc.out" 2>&1)
  check "the patched file compiles with nvcc" [ $? -eq 0 ]
  (cd "$repo" && "$bin" revert >/dev/null 2>&1)
  check "revert restores the file" bash -c "cd '$repo' && git diff --quiet"
  # The launcher: the same compile through kernelsmith-cc, the sources as committed.
  (cd "$repo" && "$bin" "$nvcc" -std=c++17 -arch=sm_90 -c pick.cu -o pick.o >"$tmp/l.out" 2>&1)
  check "the launcher's compile: exit 0" [ $? -eq 0 ]
  copy=$(find "$repo/.kernelsmith/build" -name 'pick.o.ks.cu' | head -1)
  check "... its copy dispatches both kernels at the launch" \
    [ "$(grep -o 'ks_site.take(' "${copy:-/dev/null}" | wc -l)" -eq 2 ]
else
  echo "skip: nvcc not installed (the compiles and the launcher)"
fi

# A pointer the launching function receives: the scan does not follow it,
# so no launch dispatches the winners; apply adds nothing and says why.
sed -i -e 's/^int main(void)$/static void run_one(void (*kernel)(float *, const float *, float, int), float *d_dst, float *d_src)\n{\n  dim3 grid((N_ELEMS + BLOCK_DIM - 1) \/ BLOCK_DIM), threads(BLOCK_DIM);\n  kernel<<<grid, threads>>>(d_dst, d_src, 3.0f, N_ELEMS);\n}\n\nint main(void)/' \
  -e 's/^    kernel<<<grid, threads>>>(d_dst, d_src, 3.0f, N_ELEMS);$/    run_one(kernel, d_dst, d_src);/' "$repo/pick.cu"
check "(the launch moved into run_one)" grep -q "run_one(kernel, d_dst, d_src);" "$repo/pick.cu"
(cd "$repo" && "$bin" apply >"$tmp/p2" 2>"$tmp/e2")
check "... nothing to patch" [ ! -s "$tmp/p2" ]
check "... a line for scale_elems says why" grep -q "scale_elems: the scan resolved no launch of it.*its variant is not added" "$tmp/e2"
check "... and for offset_elems" grep -q "offset_elems: the scan resolved no launch of it" "$tmp/e2"

echo "apply_pointer: $fails failed"
[ "$fails" -eq 0 ]
