#!/usr/bin/env bash
# Golden tests of the rules proposer: for every kernel of testdata/apps and
# testdata/rules/meaning (old-style twins of the apps' kernels) and every
# rule, what `kernelsmith-cc rewrite KERNEL --rule RULE` prints (the
# rule's first choice that applies; made for all rules at once with
# --each-rule) is diffed with testdata/rules/expected/KERNEL.RULE.cu.txt; for
# a rule that does not apply, that file holds the one-line reason.
#
# With SET "legacy", the kernels of testdata/legacy instead (older styles, no
# specs: the rules see their launch sites alone), diffed with
# testdata/rules/expected-legacy, and every variant made is compiled with
# NVRTC (rewrite --compile).
#
#   KS_UPDATE_GOLDEN=1   rewrite the expected files instead of failing
#   KS_GOLDEN_RULES=a,b  only these rules (to regenerate one rule's files)
#
# usage: golden_rules.sh KERNELSMITH_CC TESTDATA [apps|legacy]
set -u
bin=$(realpath "$1") data=$(realpath "$2") set=${3:-apps}
case "$set" in
  apps) expected_dir=$data/rules/expected compile= ;;
  legacy) expected_dir=$data/rules/expected-legacy compile=--compile ;;
  *) echo "golden_rules: no set '$set' (apps or legacy)"; exit 2 ;;
esac
src=$data/$set
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rules=$("$bin" rewrite --list | awk 'NR > 1 { print $1 }')
if [ -n "${KS_GOLDEN_RULES:-}" ]; then
  wanted=" ${KS_GOLDEN_RULES//,/ } "
  rules=$(for r in $rules; do case "$wanted" in *" $r "*) echo "$r" ;; esac; done)
  for r in ${KS_GOLDEN_RULES//,/ }; do
    case " $(echo $rules) " in *" $r "*) ;; *) echo "golden_rules: no rule '$r'"; exit 2 ;; esac
  done
fi

# Kernels with the directory they are scanned from and the path given to
# rewrite there, from the scan's long form: each app's directory under
# testdata/apps, and testdata/rules/meaning as a whole (set apps); each
# program's directory under testdata/legacy (set legacy).
list_kernels() { # root one_dir
  (cd "$1" && "$bin" --color=never -q scan --long --no-compdb . 2>/dev/null) |
    awk -v root="$1" -v one="$2" '/^kernel / { name = $2; sub(/\(.*/, "", name) }
       /^  at / { dir = $2; sub(/\/.*/, "", dir); if (one != "") dir = one; print name, root, dir }'
}
if [ "$set" = apps ]; then
  kernels=$(list_kernels "$src" ""; list_kernels "$data/rules/meaning" ".")
else
  kernels=$(list_kernels "$src" "")
fi
[ -n "$kernels" ] || { echo "golden_rules: no kernels found under $src"; exit 1; }

# One job per kernel, a few at a time: `rewrite --each-rule` applies every
# rule alone after one scan and one slice (the same text `rewrite --rule`
# prints, or its one-line reason).
jobs=$(nproc 2>/dev/null || echo 2)
run_kernel() { # kernel root dir
  (cd "$2" && "$bin" --color=never -q rewrite --no-compdb $compile "$1" --each-rule "$work" "$3") \
    >"$work/$1.stdout" 2>"$work/$1.stderr" || { cat "$work/$1.stderr"; echo "$1" >>"$work/failed"; }
  for rule in $rules; do
    [ -f "$work/$1.$rule.cu.txt" ] && mv "$work/$1.$rule.cu.txt" "$work/$1.$rule.actual"
  done
}
while read -r kernel root dir; do
  run_kernel "$kernel" "$root" "$dir" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done <<<"$kernels"
wait

pass=0 fail=0
while read -r kernel root dir; do
  for rule in $rules; do
    expected=$expected_dir/$kernel.$rule.cu.txt actual=$work/$kernel.$rule.actual
    if [ "${KS_UPDATE_GOLDEN:-}" = 1 ]; then
      mkdir -p "$expected_dir"
      cp "$actual" "$expected"
    fi
    if [ -f "$expected" ] && diff -u "$expected" "$actual"; then
      pass=$((pass + 1))
    else
      [ -f "$expected" ] || echo "missing: $expected"
      echo "FAIL: $kernel $rule"
      fail=$((fail + 1))
    fi
  done
done <<<"$kernels"
if [ -f "$work/failed" ]; then # rewrite itself failed (or a variant did not compile)
  echo "FAIL: rewrite --each-rule failed on: $(tr '\n' ' ' <"$work/failed")"
  fail=$((fail + 1))
fi
echo "golden_rules: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
