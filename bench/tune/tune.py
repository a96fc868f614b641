#!/usr/bin/env python3
"""`tune` on every test program, as a new user would run it, annotations gone.

For each program of bench/e2e's sets (testdata/apps by default): copy it to a
scratch git repository, strip its `kernelsmith:` spec comments (the user's
code has none), build it with its own nvcc line and run its own check; then

  tune --max-seconds S -- sh -c 'kernelsmith-cc nvcc ... && ./prog'

(the build goes through the compiler launcher, so that tune's verify step
runs the variants), then `git apply .kernelsmith/tune.patch`, rebuild with
plain nvcc and run the program's check on the patched sources. Records per
kernel tune's search speedup, its speedup inside the program and its
verdict, and with --compare E2E.json (bench/e2e/e2e.py's result for the
same programs, step by step with their specs) the in-program speedup the
step-by-step path measured for the same kernel, and their ratio.

usage: bench/tune/tune.py [--seconds S] [--sets apps] [--only NAME,...]
                          [--results DIR] [--work DIR] [--compare E2E.json]
Environment: KS_BIN (default build/cli/kernelsmith-cc), NVCC.
Writes bench/results/tune-<gpu>-<date>.json and .md.
"""
import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import e2e  # noqa: E402

SPEC_BLOCK = re.compile(r"/\*\s*kernelsmith:.*?\*/\n?", re.S)
SPEC_LINES = re.compile(r"^[ \t]*//[ \t]*kernelsmith:[^\n]*\n(?:[ \t]*//[^\n]*\n)*", re.M)


def strip_specs(text):
    """The source without its kernelsmith: comments (block or // lines)."""
    return SPEC_LINES.sub("", SPEC_BLOCK.sub("", text))


def run_program(p, ks, nvcc, work, seconds):
    d = os.path.join(work, p["name"].replace("/", "_"))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    stripped = 0
    for f in p["sources"]:
        text = open(os.path.join(p["dir"], f), errors="replace").read()
        bare = strip_specs(text)
        stripped += text != bare
        open(os.path.join(d, f), "w").write(bare)
    for f in p["copy"]:
        if os.path.isdir(f):
            shutil.copytree(f, os.path.join(os.path.dirname(d), os.path.basename(f)),
                            dirs_exist_ok=True)
        else:
            shutil.copy(f, d)
    cmd = [nvcc, "-O3", "-arch=sm_90"] + p["flags"] + ["-o", "prog"] + p["sources"]
    json.dump([{"directory": d, "command": " ".join(cmd), "file": f} for f in p["sources"]],
              open(os.path.join(d, "compile_commands.json"), "w"), indent=1)
    for g in (["init", "-q", "."], ["add", "-A"],
              ["-c", "user.email=t@ks", "-c", "user.name=t", "commit", "-qm", "as written"]):
        subprocess.run(["git"] + g, cwd=d)
    logs = os.path.join(d, "logs")
    os.makedirs(logs)
    L = lambda n: os.path.join(logs, n)
    r = {"program": p["name"], "specs_stripped": stripped}
    rc, out, err = e2e.sh(cmd, d, L("01-build.log"))
    if rc:
        r["failed"] = "does not build: " + (err.strip().splitlines() or ["?"])[-1]
        return r
    rc, out, err = e2e.sh(["./prog"] + p["args"], d, L("02-run.log"))
    r["check_before"] = rc == 0 and e2e.check_output(out + err, p["check"])
    # The build and the run in one command: tune's verify step runs the
    # program built through the launcher, which compiles the winners in.
    build = " ".join(shlex.quote(x) for x in [ks] + cmd)
    run = " ".join(shlex.quote(x) for x in ["./prog"] + p["args"])
    tj = os.path.join(d, "tune.json")
    budget = seconds * 4
    rc, out, err = e2e.sh([ks, "tune", "--max-seconds", str(budget), "--json", tj, ".", "--",
                           "sh", "-c", build + " && " + run], d, L("03-tune.log"),
                          timeout=budget * 3 + 600)
    r["tune_rc"] = rc
    r["tune_table"] = out.strip().splitlines()
    try:
        t = json.load(open(tj))
    except Exception:
        r["failed"] = "tune wrote no JSON: " + (err.strip().splitlines() or ["?"])[-1]
        return r
    r["failure"] = t.get("failure")
    r["kernels"] = [{k2: k.get(k2) for k2 in ("kernel", "share", "search_speedup", "program_speedup",
                                              "techniques", "verdict", "reason", "evaluated")}
                    for k in t.get("kernels", [])]
    patch = (t.get("patch") or {}).get("path")
    # The launcher's build is in the tree's objects; the patch goes into the
    # committed sources, and the program is built from them with plain nvcc.
    subprocess.run(["git", "checkout", "-q", "--"] + p["sources"], cwd=d)
    if patch and os.path.exists(patch) and os.path.getsize(patch):
        rc, _, err = e2e.sh(["git", "apply", patch], d, L("04-git-apply.log"))
        r["patch_applies"] = rc == 0
        if rc:
            r["failed"] = "git apply: " + (err.strip().splitlines() or ["?"])[-1]
            return r
    else:
        r["patch_applies"] = None
    rc, out, err = e2e.sh(cmd, d, L("05-rebuild.log"))
    if rc:
        r["check_after"] = False
        r["failed"] = "the patched program does not build: " + (err.strip().splitlines() or ["?"])[-1]
        return r
    rc, out, err = e2e.sh(["./prog"] + p["args"], d, L("06-run-patched.log"))
    r["check_after"] = rc == 0 and e2e.check_output(out + err, p["check"])
    r["dispatched"] = sorted(set(re.findall(r'static ksrt::site ks_site\("([^"]+)"',
                                            "".join(open(os.path.join(d, f), errors="replace").read()
                                                    for f in p["sources"]))))
    return r


def compare(rows, path):
    """Each kernel's in-program speedup beside the step-by-step path's."""
    if not path:
        return
    ref = {}
    for pr in json.load(open(path))["programs"]:
        for k in pr.get("verify", []):
            if k.get("speedup"):
                ref[(pr["program"], k.get("kernel"))] = k["speedup"]
    for r in rows:
        for k in r.get("kernels", []):
            s = ref.get((r["program"], k["kernel"]))
            if s and k.get("program_speedup"):
                k["e2e_program_speedup"] = s
                k["ratio"] = round(k["program_speedup"] / s, 3)


def table(rows):
    lines = ["| program | kernel | share | search | in program | e2e in program | ratio | verdict | "
             "patch applies / check after | techniques |", "|---|---|---:|---:|---:|---:|---:|---|---|---|"]
    f = lambda x: "%.2fx" % x if x else "-"
    for r in rows:
        chk = "%s / %s" % ({True: "yes", False: "NO", None: "no patch"}.get(r.get("patch_applies"), "-"),
                           "PASS" if r.get("check_after") else ("FAIL" if "check_after" in r else "-"))
        if not r.get("kernels"):
            lines.append("| %s | - | - | - | - | - | - | %s | %s | - |" % (
                r["program"], r.get("failed") or r.get("failure") or "no kernel", chk))
        for k in r.get("kernels", []):
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["program"], k["kernel"], "%.0f%%" % (100 * k["share"]) if k.get("share") else "-",
                f(k.get("search_speedup")), f(k.get("program_speedup")), f(k.get("e2e_program_speedup")),
                "%.2f" % k["ratio"] if k.get("ratio") else "-",
                (k.get("verdict") or "-") + ((": " + k["reason"][:120]) if k.get("reason") else ""),
                chk, k.get("techniques") or "-"))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=10, help="search seconds per hot kernel (4 kernels' worth per program)")
    ap.add_argument("--only", default="")
    ap.add_argument("--sets", default="apps")
    ap.add_argument("--polybench", default=os.environ.get("KS_POLYBENCH", ""))
    ap.add_argument("--results", default=os.environ.get("KS_RESULTS", os.path.join(e2e.ROOT, "bench/results")))
    ap.add_argument("--work", default=os.path.join(e2e.ROOT, "bench/out/tune"))
    ap.add_argument("--compare", default="", help="bench/e2e's JSON of the same programs")
    args = ap.parse_args()
    ks, nvcc, dev, label = e2e.tools()
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.date.today().isoformat()
    base = os.path.join(args.results, "tune-%s-%s" % (label, stamp))
    rows = []
    summary = {"device": dev, "date": stamp, "command": "bench/tune/tune.py " + " ".join(sys.argv[1:]),
               "seconds_per_kernel": args.seconds, "programs": rows}
    for p in e2e.programs(args):
        t0 = time.time()
        try:
            r = run_program(p, ks, nvcc, args.work, args.seconds)
        except Exception as e:  # a bug of the bench: said, and the rest goes on
            r = {"program": p["name"], "failed": "bench error: %r" % e}
        r["seconds"] = round(time.time() - t0, 1)
        rows.append(r)
        compare(rows, args.compare)
        print(table([r]).split("\n", 2)[-1], flush=True)
        json.dump(summary, open(base + ".json", "w"), indent=1)
    ok = sum(1 for r in rows if r.get("check_after"))
    ratios = [k["ratio"] for r in rows for k in r.get("kernels", []) if k.get("ratio")]
    within = sum(1 for x in ratios if 0.9 <= x <= 1.1)
    with open(base + ".md", "w") as f:
        f.write("# tune on every program (%s, %s)\n\n`%s`, %d s of search per kernel.\n\n"
                % (dev, stamp, summary["command"], args.seconds))
        f.write(table(rows) + "\n\n")
        f.write("Programs whose patched build passed its own check: %d of %d. "
                "In-program speedups within 10%% of the step-by-step path's: %d of %d.\n"
                % (ok, len(rows), within, len(ratios)))
    print("\n" + table(rows))
    print("patched and passing: %d of %d; within 10%% of e2e: %d of %d" % (ok, len(rows), within, len(ratios)))
    print("wrote %s.json and .md" % base)


if __name__ == "__main__":
    main()
