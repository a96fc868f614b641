#!/usr/bin/env bash
# apply --write and revert when things go wrong, without a GPU, on a copy of
# two test apps in a git repository (a stand-in search's winners, its run
# marked as judged on sm_90 as in apply_cli.sh):
# - apply --write killed (SIGKILL, kill_shim.c preloaded) at each of its
#   file operations in turn, N = 1, 2, ... until it completes: after every
#   kill, revert brings the tree back byte for byte (git status clean, no
#   lock or temporary file left), and a second apply --write after a kill
#   leaves no lock file either;
# - KERNELSMITH_FAULTS=safe_write.lock:N for every N: no file is left
#   changed without a record, no error says "not written" of a file that was
#   written, and revert undoes it all;
# - hostile records (absolute paths, '..', links out of the project, .git, a
#   manifest that is a link): each refused in one line naming the record,
#   nothing outside the project touched;
# - a record of the older format (absolute paths inside the project) is
#   still reverted; revert after the project was moved;
# - a source file that is a symbolic link to a file outside the project: the
#   patch names it by its path inside the project, apply --write does not
#   write through it.
# usage: revert_cli.sh KERNELSMITH_CC TESTDATA KILL_SHIM
set -u
bin=$(realpath "$1")
data=$(realpath "$2")
shim=$(realpath "$3")
. "$(dirname "$0")/check.sh"
repo=$tmp/repo
mkdir -p "$repo"
cp -r "$data/apps/saxpy" "$data/apps/gelu" "$data/apps/common" "$repo/"
(cd "$repo" && git init -q . && echo ".kernelsmith/" >>.git/info/exclude && git add -A &&
 git -c user.email=t@t -c user.name=t commit -qm apps)
(cd "$repo" && "$bin" -q optimize --stand-in-judge --rounds 2 . >"$tmp/opt.out" 2>&1)
check "stand-in search made winners" test -f "$repo/.kernelsmith/kernelsmith.db"
mark_sm90 "$repo/.kernelsmith"

clean() { [ -z "$(cd "$repo" && git status --porcelain)" ]; }
# our lock and temporary files anywhere in the project, the store included
leftovers() { find "$repo" -path "$repo/.git" -prune -o \( -name '.*.kernelsmith.lock' -o -name '.*.kernelsmith-tmp.*' \) -print; }
# back to the commit, no record (so that one failure does not make others)
reset() { (cd "$repo" && git checkout -q . && git clean -qfd && rm -rf .kernelsmith/applied); }
ksapply() { (cd "$repo" && "$bin" apply "$@"); }
ksrevert() { (cd "$repo" && "$bin" revert "$@"); }

ksapply --write >"$tmp/full.out" 2>&1
check "apply --write: exit 0" [ $? -eq 0 ]
(cd "$repo" && git diff && cat kernelsmith_dispatch.h) >"$tmp/patched"
check "apply --write: records relative paths" \
  test -z "$(awk 'NF < 4 || $4 ~ /^\// {print}' "$repo/.kernelsmith/applied/manifest")"
ksrevert >/dev/null 2>&1
check "revert: clean" clean

# --- kills at every file operation ---------------------------------------
n=0 kills=0 bad=0 lock_checked=0
while :; do
  n=$((n + 1))
  rm -f "$tmp/kill.log"
  # (ASan, where the build has it, must not insist on coming first; the
  # shell's "Killed" goes to /dev/null)
  { (cd "$repo" && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
       LD_PRELOAD="$shim" KS_KILL_AT=$n KS_KILL_LOG="$tmp/kill.log" \
       "$bin" apply --write >"$tmp/k.out" 2>&1); } 2>/dev/null
  rc=$?
  if [ $rc -ne 137 ]; then
    check "apply --write completes after $((n - 1)) killed runs (exit 0)" [ $rc -eq 0 ]
    break
  fi
  kills=$((kills + 1))
  # Once, where the kill left a lock file beside a source: apply --write
  # run again (not revert) removes it.
  left=$(leftovers | grep -v '/.kernelsmith/' | head -1)
  if [ $lock_checked -eq 0 ] && [ -n "$left" ]; then
    lock_checked=1
    ksapply --write >/dev/null 2>&1
    check "kill at $n left ${left#"$repo"/}; apply --write again removes it" \
      test -z "$(leftovers | grep -v '/.kernelsmith/')"
  fi
  ksrevert >"$tmp/r.out" 2>&1
  rrc=$?
  if ! clean || [ -n "$(leftovers)" ] || [ $rrc -ne 0 ]; then
    bad=$((bad + 1))
    echo "    kill at call $n ($(grep 'killed here' "$tmp/kill.log")): revert exit $rrc, then:"
    (cd "$repo" && git status --porcelain; leftovers) | sed 's/^/      /'
    sed 's/^/      /' "$tmp/r.out"
    reset
  fi
  [ $n -lt 400 ] || break
done
check "kills tried at $kills points" [ $kills -ge 20 ]
check "... revert undid every one of them byte for byte" [ $bad -eq 0 ]
check "... one left a lock file beside a source (so that was tried)" [ $lock_checked -eq 1 ]
ksrevert >/dev/null 2>&1
check "... and the completed apply" clean

# --- an injected lock failure at every write -------------------------------
reset
n=0 bad=0
while :; do
  n=$((n + 1))
  (cd "$repo" && KERNELSMITH_FAULTS=safe_write.lock:$n "$bin" apply --write >"$tmp/f.out" 2>"$tmp/f.err")
  rc=$?
  [ $rc -eq 0 ] && break
  # every file changed is in the record
  for f in $(cd "$repo" && git status --porcelain | awk '{print $2}'); do
    if ! awk '{print $4}' "$repo/.kernelsmith/applied/manifest" 2>/dev/null | grep -qxF "$f"; then
      echo "    lock fault $n: $f changed with no record"; bad=$((bad + 1))
    fi
  done
  # "not written" is never said of a file that was written
  for f in $(sed -n 's/^kernelsmith-cc: error: \([^:]*\): .*not written.*/\1/p' "$tmp/f.err"); do
    rel=${f#"$repo"/}
    if [ -n "$(cd "$repo" && git status --porcelain -- "$rel")" ]; then
      echo "    lock fault $n: the error says $rel was not written, but it was"; bad=$((bad + 1))
    fi
  done
  ksrevert >/dev/null 2>&1
  clean || { echo "    lock fault $n: revert did not restore the tree"; bad=$((bad + 1)); }
  [ $n -lt 50 ] || break
done
check "lock faults at $((n - 1)) writes: nothing changed without a record, no false 'not written'" \
  [ $bad -eq 0 ] && [ $n -ge 4 ]
ksrevert >/dev/null 2>&1
check "... and revert undoes each" clean

# --- hostile records ------------------------------------------------------
reset
out=$tmp/outside
mkdir -p "$out/dir"
printf 'export PATH=/usr/bin\n' >"$out/victim"
cp "$out/victim" "$out/victim2"
cp "$out/victim" "$out/dir/victim"
printf 'echo owned\n' >"$tmp/payload"
sha() { sha256sum "$1" | cut -d' ' -f1; }
v=$(sha "$out/victim") p=$(sha "$tmp/payload") g=$(sha "$repo/.git/config")
mkdir -p "$repo/.kernelsmith/applied"
cp "$tmp/payload" "$repo/.kernelsmith/applied/$p.orig"
# what a cloned repository can ship: the older format, a file to overwrite
# with the payload and one to delete
printf '%s %s %s\n%s - %s\n' "$v" "$p" "$out/victim" "$v" "$out/victim2" \
  >"$repo/.kernelsmith/applied/manifest"
ksrevert >"$tmp/h0.out" 2>"$tmp/h0.err"
check "a shipped record naming files outside: revert exits 1" [ $? -eq 1 ]
check "... the file outside is not overwritten" cmp -s "$out/victim" "$out/dir/victim"
check "... nor deleted" test -f "$out/victim2"
check "... each refused in one line naming it" [ "$(grep -c 'manifest:[12]: refused: ' "$tmp/h0.err")" -eq 2 ]
ln -s "$out/victim" "$repo/evil.cu"
ln -s "$out/dir" "$repo/evildir"
cp "$repo/.git/config" "$tmp/git.config"
cat >"$repo/.kernelsmith/applied/manifest" <<EOF
$v $p $out/victim
$v - $out/victim2
done $v $p ../outside/victim
done $v $p $out/victim
done $v $p evil.cu
done $v $p evildir/victim
done $g $p .git/config
pending $v $p saxpy/../../outside/victim
EOF
ksrevert >"$tmp/h.out" 2>"$tmp/h.err"
check "hostile records: revert exits 1" [ $? -eq 1 ]
check "... each refused in one line naming it" [ "$(grep -c 'manifest:[1-8]: refused: ' "$tmp/h.err")" -eq 8 ]
sed 's/^/    /' "$tmp/h.err"
check "... nothing outside the project written" cmp -s "$out/victim" "$out/dir/victim"
check "... or deleted" test -f "$out/victim2"
check "... .git/config untouched" cmp -s "$repo/.git/config" "$tmp/git.config"
check "... the refused records are kept as they were" [ "$(wc -l <"$repo/.kernelsmith/applied/manifest")" -eq 8 ]
# apply --write with such a record: its own changes are made and undone as
# usual, the refused records stay refused
rm -f "$repo/evil.cu" "$repo/evildir"
ksapply --write >/dev/null 2>&1
check "... apply --write beside them: exit 0" [ $? -eq 0 ]
ksrevert >/dev/null 2>&1
check "... revert undoes it (exit 1: the refused ones)" clean
check "... still nothing outside touched" cmp -s "$out/victim" "$out/dir/victim"
rm -rf "$repo/.kernelsmith/applied"
# a manifest that is a link out of the project is neither read nor written
mkdir -p "$repo/.kernelsmith/applied"
ln -s "$out/victim" "$repo/.kernelsmith/applied/manifest"
ksapply --write >/dev/null 2>"$tmp/ml.err"
check "a manifest that is a link: apply --write refuses (exit 1)" [ $? -eq 1 ]
check "... changes nothing" clean
check "... and does not write through it" cmp -s "$out/victim" "$out/dir/victim"
ksrevert >/dev/null 2>"$tmp/ml2.err"
check "... revert refuses it too" grep -q "manifest: not a regular file" "$tmp/ml2.err"
rm -rf "$repo/.kernelsmith/applied"

# --- the older record format; a moved project --------------------------------
reset
ksapply --write >/dev/null 2>&1
awk -v root="$(realpath "$repo")" '{print $2, $3, root "/" $4}' "$repo/.kernelsmith/applied/manifest" >"$tmp/old"
cp "$tmp/old" "$repo/.kernelsmith/applied/manifest"
ksrevert >"$tmp/o.out" 2>&1
check "a record of the older format (absolute paths inside the project): reverted" [ $? -eq 0 ]
check "... byte for byte" clean
ksapply --write >/dev/null 2>&1
mv "$repo" "$tmp/moved"
(cd "$tmp/moved" && "$bin" revert >"$tmp/m.out" 2>&1)
check "revert after the project moved: exit 0" [ $? -eq 0 ]
check "... the header it created is removed" test ! -e "$tmp/moved/kernelsmith_dispatch.h"
mv "$tmp/moved" "$repo"
check "... byte for byte" clean

# --- a source that is a link to a file outside the project ------------------
reset
mkdir -p "$out/src/saxpy"
cp -r "$repo/common" "$out/src/"
cp "$repo/saxpy/saxpy.cu" "$out/src/saxpy/"
cp "$out/src/saxpy/saxpy.cu" "$tmp/saxpy.orig"
rm "$repo/saxpy/saxpy.cu"
ln -s "$out/src/saxpy/saxpy.cu" "$repo/saxpy/saxpy.cu"
ksapply >"$tmp/l.patch" 2>"$tmp/l.err"
check "a link out of the project: the patch names its path in the project" \
  grep -q "^diff --git a/saxpy/saxpy.cu b/saxpy/saxpy.cu" "$tmp/l.patch"
check "... never a path that climbs out" test -z "$(grep '^diff --git a/\.\./' "$tmp/l.patch")"
ksapply --write >"$tmp/lw.out" 2>"$tmp/lw.err"
check "... apply --write: exit 1" [ $? -eq 1 ]
check "... one line says the link is not written through" \
  [ "$(grep -c "saxpy/saxpy.cu: a symbolic link to .*outside .*; not written" "$tmp/lw.err")" -eq 1 ]
check "... the file outside is untouched" cmp -s "$out/src/saxpy/saxpy.cu" "$tmp/saxpy.orig"
check "... the other file is patched" grep -q "patched gelu/gelu.cu" "$tmp/lw.out"
ksrevert >/dev/null 2>&1
rm "$repo/saxpy/saxpy.cu"
(cd "$repo" && git checkout -q saxpy/saxpy.cu)
check "... revert undoes the rest" clean

echo "revert_cli: $fails failed"
exit $((fails > 0))
