#!/usr/bin/env bash
# apply end to end without a GPU, on a copy of testdata/apps in a git
# repository: a stand-in search makes winners for every kernel; its run is
# then marked as judged on sm_90 (a test fixture: the stand-in's numbers are
# not measurements, which is why apply refuses such a run unmarked). Then:
# the refusal of an unmarked run; the patch passes `git apply --check` and
# `patch -p1 --dry-run`; it applies; every patched .cu compiles with nvcc for
# sm_90 (where nvcc is installed); apply --write gives the same files;
# applying twice changes nothing; a kernel whose definition changed since
# the run is refused; the launch sites that cannot be dispatched say why;
# revert restores every file byte for byte and leaves an edited one alone;
# edited winner files change nothing; exit codes of -k and of nothing to
# apply; no leak on --variant's error path. (Kills, hostile records and
# links: revert_cli.sh.)
# usage: apply_cli.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1")
data=$(realpath "$2")
. "$(dirname "$0")/check.sh"
repo=$tmp/repo
mkdir -p "$repo"
cp -r "$data/apps/." "$repo/"
rm -rf "$repo/expected"
(cd "$repo" && git init -q . && git add -A && git -c user.email=t@t -c user.name=t commit -qm apps)

(cd "$repo" && "$bin" -q optimize --stand-in-judge --rounds 3 . >"$tmp/opt.out" 2>&1)
check "stand-in search made winners" test "$(ls "$repo/.kernelsmith/winners" | wc -l)" -ge 10

(cd "$repo" && "$bin" apply >"$tmp/p0" 2>"$tmp/e0")
check "an unmarked stand-in run is refused" grep -q "was not judged on a GPU" "$tmp/e0"

mark_sm90 "$repo/.kernelsmith"

(cd "$repo" && "$bin" apply >"$tmp/patch" 2>"$tmp/apply.err")
check "apply: exit 0" [ $? -eq 0 ]
check "apply: a patch" grep -q "^diff --git a/" "$tmp/patch"
check "apply: the header is created" grep -q "^+++ b/kernelsmith_dispatch.h" "$tmp/patch"
check "apply: sources untouched" test -z "$(cd "$repo" && git status --porcelain --untracked-files=no)"
(cd "$repo" && git apply --check "$tmp/patch")
check "git apply --check" [ $? -eq 0 ]
if command -v patch >/dev/null; then
  (cd "$repo" && patch -p1 --dry-run <"$tmp/patch" >/dev/null)
  check "patch -p1 --dry-run" [ $? -eq 0 ]
fi
sites=$(grep -c "if (!ks_site.take(" "$tmp/patch")
check "launch sites dispatched ($sites)" [ "$sites" -ge 8 ]
grep "left as written" "$tmp/apply.err" | sed 's/^/    /'

# The winner files are an export: an edited body or a deleted requires line
# in them changes nothing in what apply writes (it takes the store's).
for f in "$repo"/.kernelsmith/winners/*.cu; do
  sed -i -e '0,/{$/s//{ ks_y.x = 0.0f;/' -e '0,/^ \*   requires .*/{/^ \*   requires .*/d}' "$f"
done
check "(the winner files are edited)" grep -q "ks_y.x = 0.0f;" "$repo"/.kernelsmith/winners/*.cu
(cd "$repo" && "$bin" apply >"$tmp/patch.edited" 2>/dev/null)
check "edited winner files change nothing in the patch" cmp -s "$tmp/patch" "$tmp/patch.edited"

# Exit codes: a kernel asked for by name that has no winner fails, in one
# line; nothing to apply says so.
(cd "$repo" && "$bin" apply -k no_such_kernel >"$tmp/k.patch" 2>"$tmp/k.err")
check "-k with no winner: exit 1" [ $? -eq 1 ]
check "... one line says so" [ "$(grep -c "no_such_kernel: not applied" "$tmp/k.err")" -eq 1 ]
(cd "$repo" && "$bin" apply --min-speedup 1000 >"$tmp/none.patch" 2>"$tmp/none.err")
check "nothing to apply: exit 0" [ $? -eq 0 ]
check "... and one line says so" [ "$(grep -c "nothing to apply" "$tmp/none.err")" -eq 1 ]
check "... no patch" test ! -s "$tmp/none.patch"

(cd "$repo" && git apply "$tmp/patch")
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if [ -x "$nvcc" ]; then
  bad=0
  for f in $(cd "$repo" && git diff --name-only -- '*.cu'); do
    if ! (cd "$repo/$(dirname "$f")" && "$nvcc" -std=c++17 -arch=sm_90 -c "$(basename "$f")" \
          -o "$tmp/$(basename "$f").o" 2>"$tmp/nvcc.err"); then
      echo "    $f does not compile:"; head -5 "$tmp/nvcc.err" | sed 's/^/      /'; bad=$((bad + 1))
    fi
  done
  check "every patched .cu compiles with nvcc" [ $bad -eq 0 ]
fi
(cd "$repo" && git diff >"$tmp/applied.diff" && git stash -q -u)

(cd "$repo" && "$bin" apply --write 2>"$tmp/write.err")
check "apply --write: exit 0" [ $? -eq 0 ]
(cd "$repo" && git diff >"$tmp/written.diff")
check "--write gives what the patch gives" cmp -s "$tmp/applied.diff" "$tmp/written.diff"
check "--write: the header is there" test -f "$repo/kernelsmith_dispatch.h"
(cd "$repo" && "$bin" apply >"$tmp/again" 2>"$tmp/again.err")
check "applying twice changes nothing" test ! -s "$tmp/again"
check "... and says so" grep -q "already in the file" "$tmp/again.err"

# revert: byte for byte, the created header removed; an edited file is kept.
(cd "$repo" && "$bin" revert >"$tmp/revert.out" 2>&1)
check "revert: exit 0" [ $? -eq 0 ]
check "revert: the tree is as committed" test -z "$(cd "$repo" && git status --porcelain --untracked-files=no)"
check "revert: the header is gone" test ! -e "$repo/kernelsmith_dispatch.h"
(cd "$repo" && "$bin" apply --write 2>/dev/null)
echo "// an edit after apply" >>"$repo/gelu/gelu.cu"
(cd "$repo" && "$bin" revert >"$tmp/revert2.out" 2>"$tmp/revert2.err")
check "revert: an edited file is left as it is (exit 1)" [ $? -eq 1 ]
check "... and named" grep -q "gelu.cu: changed since apply wrote it" "$tmp/revert2.err"
check "... the others are reverted" test -z "$(cd "$repo" && git status --porcelain --untracked-files=no -- . ':!gelu/gelu.cu')"

# --export-fixes: clang-tidy's replacements; clang-apply-replacements (where
# installed) makes the same files as the patch (it may order the new
# #include among the others).
(cd "$repo" && git checkout -q . && rm -f kernelsmith_dispatch.h)
mkdir -p "$tmp/fixes"
(cd "$repo" && "$bin" apply --export-fixes "$tmp/fixes/fixes.yaml" >"$tmp/fx.patch" 2>/dev/null)
check "--export-fixes: the YAML" grep -q "ReplacementText:" "$tmp/fixes/fixes.yaml"
# (the header, written already, is not in that patch)
sed '/^diff --git a\/kernelsmith_dispatch.h/,$d' "$tmp/patch" >"$tmp/patch.noheader"
check "--export-fixes: the header written" test -f "$repo/kernelsmith_dispatch.h"
check "--export-fixes: the same patch otherwise" cmp -s "$tmp/fx.patch" "$tmp/patch.noheader"
car=$(command -v clang-apply-replacements || command -v clang-apply-replacements-16 || true)
if [ -n "$car" ]; then
  "$car" "$tmp/fixes"
  check "clang-apply-replacements applies them" [ $? -eq 0 ]
  (cd "$repo" && git diff | grep -c "^+.*if (!ks_site.take(" >"$tmp/fx.sites")
  check "... every launch site dispatched" [ "$(cat "$tmp/fx.sites")" -eq "$sites" ]
fi

# An older header (an earlier version's apply) is brought up to date, and
# revert puts it back as it was.
(cd "$repo" && git checkout -q . && rm -f kernelsmith_dispatch.h)
(cd "$repo" && "$bin" apply --write >/dev/null 2>&1)
sed 's/^#define KSRT_VERSION_MINOR .*/#define KSRT_VERSION_MINOR 0/' "$repo/kernelsmith_dispatch.h" >"$tmp/h.old"
(cd "$repo" && "$bin" revert >/dev/null 2>&1)
cp "$tmp/h.old" "$repo/kernelsmith_dispatch.h"
(cd "$repo" && git add kernelsmith_dispatch.h && git -c user.email=t@t -c user.name=t commit -qm "old header")
(cd "$repo" && "$bin" apply >"$tmp/up.patch" 2>/dev/null)
check "an older header: updated in the patch" grep -q "^+#define KSRT_VERSION_MINOR [1-9]" "$tmp/up.patch"
(cd "$repo" && "$bin" apply --write >"$tmp/up.out" 2>&1)
check "... and by --write, which says so" grep -q "updated kernelsmith_dispatch.h" "$tmp/up.out"
check "... to this version's" grep -q "^#define KSRT_VERSION_MINOR [1-9]" "$repo/kernelsmith_dispatch.h"
(cd "$repo" && "$bin" revert >/dev/null 2>&1)
check "revert: the older header is back" cmp -s "$tmp/h.old" "$repo/kernelsmith_dispatch.h"
(cd "$repo" && git rm -q kernelsmith_dispatch.h && git -c user.email=t@t -c user.name=t commit -qm "no header")

# A kernel edited since the run is not applied.
(cd "$repo" && git checkout -q . && rm -f kernelsmith_dispatch.h)
sed -i 's/if (i < n) y\[i\] = a \* x\[i\] + y\[i\];/if (i < n) y[i] = a * x[i] + y[i]; \/\/ edited/' "$repo/saxpy/saxpy.cu"
(cd "$repo" && "$bin" apply -k saxpy_kernel >"$tmp/edited" 2>"$tmp/edited.err")
check "an edited kernel is refused" grep -q "changed since run" "$tmp/edited.err"
check "... and nothing is patched" test ! -s "$tmp/edited"
(cd "$repo" && "$bin" apply -k saxpy_kernel >/dev/null 2>&1)
check "... exit 1 (it was asked for by name)" [ $? -eq 1 ]

# apply --variant's error path frees what it allocated (LeakSanitizer, in a
# build with -DKS_SANITIZE=ON): a name that two kernels have.
mkdir -p "$tmp/twice/a" "$tmp/twice/b"
cp "$data/apps/saxpy/saxpy.cu" "$tmp/twice/a/"
cp "$data/apps/saxpy/saxpy.cu" "$tmp/twice/b/"
cp -r "$data/apps/common" "$tmp/twice/"
(cd "$tmp/twice" && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1" \
   "$bin" apply -k saxpy_kernel --variant "$repo/.kernelsmith/winners/saxpy_kernel.cu" . \
   >/dev/null 2>"$tmp/twice.err")
check "--variant with a name of 2 kernels: exit 1" [ $? -eq 1 ]
check "... says so" grep -q "'saxpy_kernel' names 2 kernels" "$tmp/twice.err"
check "... and leaks nothing" test -z "$(grep LeakSanitizer "$tmp/twice.err")"

echo "apply_cli: $fails failed"
exit $((fails > 0))
