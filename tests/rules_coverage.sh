#!/usr/bin/env bash
# bench/rules-coverage's CPU part on a few testdata kernels: the results
# JSON's shape (every rule of
# `rewrite --list` counted, a refused kernel in its own column, applied
# variants compiled with NVRTC, normalized reasons counted together).
set -u
bin=$1 src=$2
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # description, then a command whose success is the assertion
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); else echo "FAIL: $what"; fail=$((fail + 1)); fi
}
status() { "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; }

# The benchmark on four kernels: three with a spec, one without.
mkdir "$tmp/ext" "$tmp/results"
KS_BIN=$bin python3 "$src/bench/rules-coverage/coverage.py" --ext "$tmp/ext" --sets apps,frontend,polybench \
  --only-kernels saxpy_kernel,gelu_forward_kernel,reduce_sum_kernel,c_linkage_copy --results "$tmp/results" --label test \
  >"$tmp/bench.out" 2>"$tmp/bench.err"
check "the benchmark exits 0"        [ $? = 0 ]
json=$(ls "$tmp"/results/rules-coverage-test-*.json 2>/dev/null | head -1)
check "it writes the JSON"           [ -n "$json" ]
check "and the .md"                  bash -c "ls '$tmp'/results/rules-coverage-test-*.md >/dev/null"
check "it prints the rule table"     grep -q '^| rule | tried | applied | compiled | top refusals' "$tmp/bench.out"
"$bin" rewrite --list | awk 'NR > 1 {print $1}' >"$tmp/rules.txt"
check "the JSON's shape" python3 - "$json" "$tmp/rules.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rules = open(sys.argv[2]).read().split()
assert d["schema"] == "kernelsmith-cc.rules-coverage" and d["version"] == 1, d["schema"]
assert d["rules"] == rules, (d["rules"], rules)
assert d["absent"] == ["polybench"], d["absent"]
ks = {k["kernel"]: k for k in d["kernels"]}
assert set(ks) == {"saxpy_kernel", "gelu_forward_kernel", "reduce_sum_kernel", "c_linkage_copy"}, set(ks)
for name in ("saxpy_kernel", "gelu_forward_kernel", "reduce_sum_kernel"):
    k = ks[name]
    assert k["status"] == "tried" and k["original_compile"] == "ok", k
    assert set(k["rules"]) == set(rules)
    for r, v in k["rules"].items():
        assert isinstance(v["applied"], bool)
        if v["applied"]:
            assert v["compile"] == "ok", (name, r, v)
        else:
            assert v["reason"] and "\n" not in v["reason"] and name not in v["reason"], (name, r, v)
assert ks["saxpy_kernel"]["family"] == "elementwise" and ks["reduce_sum_kernel"]["family"] == "reduction"
assert ks["saxpy_kernel"]["rules"]["vectorize"]["applied"]
assert ks["reduce_sum_kernel"]["rules"]["warp_reduce"]["applied"]
c = ks["c_linkage_copy"]
# Today a kernel without a spec is refused before any rule runs; once
# rewrite takes such kernels it is tried like the others.
assert c["status"] in ("tried", "not tried"), c
if c["status"] == "not tried":
    assert c["reason"] and "c_linkage_copy" not in c["reason"], c
    assert sum(x["kernels"] for x in d["not_tried"]) == 1
tried = [k for k in d["kernels"] if k["status"] == "tried"]
for r in rules:
    s = d["by_rule"][r]
    assert s["tried"] == len(tried), (r, s)
    assert s["applied"] == sum(k["rules"][r]["applied"] for k in tried)
    assert s["compiled"] <= s["applied"]
    assert sum(x["kernels"] for x in s["refusals"]) == s["tried"] - s["applied"], (r, s)
# Two kernels refused by a rule for the same reason count once, together.
assert any(x["kernels"] >= 2 for r in rules for x in d["by_rule"][r]["refusals"]), d["by_rule"]
g = d["by_codebase"]
assert g["apps"]["kernels"] == 3 and g["apps"]["tried"] == 3 and g["frontend"]["kernels"] == 1, g
assert g["apps"]["applied"]["vectorize"] == 2 and g["apps"]["compiled"]["vectorize"] == 2
assert sum(f["kernels"] for f in d["by_family"].values()) == 4
PY
check "normalized reasons" python3 -c "
import sys; sys.path.insert(0, '$src/bench/rules-coverage'); import coverage as c
a = c.normalize(\"'out' of foo_k at /a/b/x.cu:12 needs 4 lanes in out_len, a 1-D kernel\", {'foo_k'}, {'out', 'out_len', 'a'})
b = c.normalize(\"'in' of bar_k at /c/y.cu:7 needs 8 lanes in n_rows, a 1-D kernel\", {'bar_k'}, {'in', 'n_rows'})
assert a == b == \"'X' of KERNEL at PATH:N needs N lanes in ID, a 1-D kernel\", (a, b)
assert c.normalize(\"the kernel's 'k' and the blocks' sums\", set()) == \"the kernel's 'X' and the blocks' sums\"
r = c.refusal(c.normalize(\"/p/q.cu:20: kernel 'k2' has no spec: add a 'kernelsmith:' comment\", {'k2'}))
assert r == \"kernel 'X' has no spec\", r
r = c.refusal(c.normalize(\"cannot slice the kernel: it reads the texture reference 'tex' (declared at m.cu:7), which CUDA 12 removed: NVRTC cannot compile it\", {'k'}))
assert r == \"cannot slice the kernel: it reads the texture reference 'X' (declared at FILE:N), which CUDA N removed\", r
assert c.family('polybench', 'linear-algebra/kernels/2mm/2mm.cu', 'mm2_kernel1') == 'matmul'
assert c.family('polybench', 'stencils/fdtd-2d/fdtd2d.cu', 'fdtd_step1_kernel') == 'stencil'
assert c.family('apps', 'gemv/gemv.cu', 'gemv_kernel') == 'matrix-vector'
"
check "the GPU part skips without a GPU" bash -c "
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q 'GPU '; then exit 0; fi
  PATH=/usr/bin:/bin KS_BIN='$bin' python3 '$src/bench/rules-coverage/gpu.py' --results '$tmp/results' >'$tmp/gpu.out' 2>&1
  [ \$? = 77 ] && grep -q 'skipped: ' '$tmp/gpu.out' && ! ls '$tmp'/results/rules-coverage-gpu-* >/dev/null 2>&1"

echo "rules_coverage: $pass passed, $fail failed"
[ "$fail" = 0 ] || { echo "--- benchmark stderr ---"; tail -20 "$tmp/bench.err"; exit 1; }
