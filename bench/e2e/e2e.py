#!/usr/bin/env python3
"""The whole user path on every program, as a new user would take it.

For each program: copy it to a scratch directory (a git repository, so that
nothing of the tree is touched), build it with its own nvcc line and write a
compile_commands.json beside it, run its own check, then

  profile                 which kernels take the GPU's time
  profile --capture K,..  the hot kernels' real inputs (90% of GPU time, at most 4)
  optimize --profile      the search, from captures (and specs, where the code has them)
  apply --write           the winners into the sources
  rebuild, run the check  the program's own check must still pass
  verify                  the kernels' GPU time inside the program, variants on and off
  revert; launcher build  the same compile through `kernelsmith-cc nvcc`: the same dispatch?

and record: the search's FAST winners, how many apply dispatched and why the
rest were left as written, the program's check before and after, the GPU
time inside the program against the search's speedup, and whether the
launcher dispatched what apply did. Prints a table and writes JSON and a
Markdown summary to the results directory.

usage: bench/e2e/e2e.py [--seconds S] [--only NAME,...] [--polybench DIR]
                        [--llmc DIR] [--samples DIR] [--results DIR] [--work DIR]
                        [--sets legacy,apps,polybench,llmc,samples]
       bench/e2e/e2e.py --merge OUT.json PART.json...   (a run split over commands)
Environment: KS_BIN (default build/cli/kernelsmith-cc), NVCC.
"""
import argparse
import datetime
import glob
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def sh(cmd, cwd, log, env=None, timeout=900):
    """Runs cmd (a list) in cwd; its output goes to log; returns (rc, stdout, stderr)."""
    t0 = time.time()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=timeout, errors="replace")
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = 124, e.stdout or "", (e.stderr or "") + "\n(timed out)"
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        if isinstance(err, bytes):
            err = err.decode(errors="replace")
    with open(log, "w") as f:
        f.write("$ %s\n(cwd %s, rc %d, %.1f s)\n--- stdout\n%s\n--- stderr\n%s\n"
                % (" ".join(cmd), cwd, rc, time.time() - t0, out, err))
    return rc, out, err


def programs(args):
    """name, source dir, sources, nvcc flags, run arguments, check."""
    out = []
    pass_check = (r"^\S+: PASS\s*$", r"FAIL")
    if "legacy" in args.sets:
        for d in sorted(glob.glob(os.path.join(ROOT, "testdata/legacy/*/"))):
            name = os.path.basename(d.rstrip("/"))
            srcs = sorted(os.path.basename(f) for f in glob.glob(d + "*.cu"))
            if srcs:
                out.append({"name": "legacy/" + name, "set": "legacy", "dir": d, "sources": srcs,
                            "copy": [], "flags": [], "args": [], "check": pass_check})
    if "apps" in args.sets:
        for d in sorted(glob.glob(os.path.join(ROOT, "testdata/apps/*/"))):
            name = os.path.basename(d.rstrip("/"))
            srcs = sorted(os.path.basename(f) for f in glob.glob(d + "*.cu"))
            if name in ("common", "expected") or not srcs:
                continue
            out.append({"name": "apps/" + name, "set": "apps", "dir": d, "sources": srcs,
                        "copy": [os.path.join(ROOT, "testdata/apps/common")],
                        "flags": ["-std=c++17"], "args": [], "check": pass_check})
    if "polybench" in args.sets and args.polybench:
        pb = os.path.join(os.path.realpath(args.polybench), "CUDA")
        utils = os.path.join(pb, "utilities")
        # PolyBench-ACC's CUDA programs print one "Non-Matching CPU-GPU Outputs
        # ... Percent: N" line per output; N must be 0.
        check = (r"Non-Matching CPU-GPU Outputs Beyond Error Threshold of [0-9.]+ Percent: 0\s*$",
                 r"Percent: [1-9]")
        for rel, size in [("linear-algebra/kernels/gemm", "STANDARD"),
                          ("linear-algebra/kernels/2mm", "STANDARD"),
                          ("linear-algebra/kernels/syrk", "STANDARD"),
                          ("linear-algebra/kernels/atax", "LARGE"),
                          ("linear-algebra/kernels/bicg", "LARGE"),
                          ("linear-algebra/kernels/mvt", "LARGE"),
                          ("linear-algebra/kernels/gesummv", "LARGE"),
                          ("datamining/covariance", "STANDARD"),
                          ("datamining/correlation", "STANDARD"),
                          ("stencils/convolution-2d", "LARGE"),
                          ("stencils/jacobi-2d-imper", "STANDARD"),
                          ("stencils/fdtd-2d", "STANDARD")]:
            d = os.path.join(pb, rel)
            srcs = sorted(os.path.basename(f) for f in glob.glob(d + "/*.cu"))
            if not srcs:
                continue
            out.append({"name": "polybench/" + os.path.basename(rel), "set": "polybench",
                        "dir": d, "sources": srcs, "copy": glob.glob(d + "/*.cuh"),
                        "flags": ["-I" + utils] + (["-D%s_DATASET" % size] if size != "STANDARD" else []) + [
                                  "-DcudaThreadSynchronize=cudaDeviceSynchronize"], "args": [],
                        "check": check})
    if "llmc" in args.sets and args.llmc:
        # karpathy's llm.c: dev/cuda's kernel programs, built as its Makefile
        # builds them; the argument picks the kernel version, and the program
        # checks it against its CPU reference ("Mismatch of ..." and exit 1
        # when an element is off).
        d = os.path.join(os.path.realpath(args.llmc), "dev", "cuda")
        check = (r"^All results match", r"^Mismatch of")
        for name, arg in [("gelu_forward", "1"), ("residual_forward", "1"),
                          ("layernorm_forward", "1"), ("crossentropy_forward", "1"),
                          ("encoder_forward", "1"), ("adamw", "1"), ("permute", "")]:
            if os.path.exists(os.path.join(d, name + ".cu")):
                out.append({"name": "llmc/" + name + (":" + arg if arg else ""), "set": "llmc", "dir": d,
                            "sources": [name + ".cu"], "copy": [os.path.join(d, "common.h")],
                            "flags": ["--use_fast_math", "-std=c++17"],
                            "libs": ["-lcublas", "-lcublasLt"], "args": [arg] if arg else [],
                            "check": check})
    if "samples" in args.sets and args.samples:
        # NVIDIA's cuda-samples, each with its own check line; Common/ stays
        # where it is (an include path).
        root = os.path.realpath(args.samples)
        common = ["-I" + os.path.join(root, "Common")]
        for rel, srcs, ok, bad in [
                ("0_Introduction/matrixMul", ["matrixMul.cu"], r"Result = PASS", r"Result = FAIL"),
                ("0_Introduction/vectorAdd", ["vectorAdd.cu"], r"^Test PASSED", r"FAIL|[Ff]ailed"),
                ("6_Performance/transpose", ["transpose.cu"], r"^Test passed", r"[Ff]ailed"),
                ("6_Performance/alignedTypes", ["alignedTypes.cu"], r"^Test passed", r"[Ff]ailed"),
                ("2_Concepts_and_Techniques/scalarProd", ["scalarProd.cu", "scalarProd_cpu.cpp"],
                 r"^Test passed", r"[Ff]ailed"),
                ("2_Concepts_and_Techniques/convolutionSeparable",
                 ["convolutionSeparable.cu", "main.cpp", "convolutionSeparable_gold.cpp"],
                 r"^Test passed", r"[Ff]ailed")]:
            d = os.path.join(root, "Samples", rel)
            if all(os.path.exists(os.path.join(d, f)) for f in srcs):
                out.append({"name": "samples/" + os.path.basename(rel), "set": "samples", "dir": d,
                            "sources": srcs, "copy": glob.glob(d + "/*.h") + glob.glob(d + "/*.cuh"),
                            "flags": common, "args": [], "check": (ok, bad)})
    if args.only:
        want = set(args.only.split(","))
        order = args.only.split(",")

        def rank(p):
            names = (p["name"], p["name"].split("/")[-1], p["name"].split("/")[-1].split(":")[0])
            return min([order.index(n) for n in names if n in order] or [len(order)])
        # in the order --only names them
        out = sorted((p for p in out if rank(p) < len(order)), key=rank)
    return out


def check_output(text, check):
    ok_re, bad_re = check
    return bool(re.search(ok_re, text, re.M)) and not re.search(bad_re, text, re.M)


def launcher_copy(d, out):
    """Where the compiler launcher wrote the rewritten copy for OUT (built in
    D): the store's build/<sha256 of the copy's absolute name, 16 digits>/."""
    name = os.path.join(os.path.realpath(os.path.dirname(os.path.join(d, out))),
                        os.path.basename(out) + ".ks.cu")
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return os.path.join(d, ".kernelsmith", "build", digest, os.path.basename(name))


def hot_kernels(profile_json, share=0.9, most=4):
    try:
        p = json.load(open(profile_json))
    except Exception:
        return []
    ks = sorted(p.get("kernels", []), key=lambda k: -k.get("total_ms", 0))
    total = sum(k.get("total_ms", 0) for k in ks) or 1
    out, acc = [], 0.0
    for k in ks:
        if acc >= share * total or len(out) >= most:
            break
        src = k.get("source") or {}
        name = src.get("qualified_name") or k.get("mangled")
        if not name:
            continue
        out.append(name)
        acc += k.get("total_ms", 0)
    return out


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def run_program(p, ks, nvcc, work, seconds):
    d = os.path.join(work, p["name"].replace("/", "_").replace(":", "_"))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f in p["sources"]:
        shutil.copy(os.path.join(p["dir"], f), d)
    for f in p["copy"]:
        # A shared folder (testdata/apps/common) sits beside the programs, as
        # in the tree they come from; the programs after the first find it there.
        if os.path.isdir(f):
            shutil.copytree(f, os.path.join(os.path.dirname(d), os.path.basename(f)), dirs_exist_ok=True)
        else:
            shutil.copy(f, d)
    exe = "./prog"
    libs = p.get("libs", [])
    cmd = [nvcc, "-O3", "-arch=sm_90"] + p["flags"] + ["-o", "prog"] + p["sources"] + libs
    json.dump([{"directory": d, "command": " ".join(cmd), "file": f} for f in p["sources"]],
              open(os.path.join(d, "compile_commands.json"), "w"), indent=1)
    subprocess.run(["git", "init", "-q", "."], cwd=d)
    subprocess.run(["git", "add", "-A"], cwd=d)
    subprocess.run(["git", "-c", "user.email=e2e@ks", "-c", "user.name=e2e", "commit", "-qm",
                    "as fetched"], cwd=d)
    logs = os.path.join(d, "logs")
    os.makedirs(logs)
    r = {"program": p["name"], "set": p["set"], "build": " ".join(cmd[0:1] + cmd[1:])}
    L = lambda n: os.path.join(logs, n)

    rc, out, err = sh(cmd, d, L("01-build.log"))
    if rc:
        r["failed"] = "does not build: " + (err.strip().splitlines() or ["?"])[-1]
        return r
    rc, out, err = sh([exe] + p["args"], d, L("02-run.log"))
    r["check_before"] = rc == 0 and check_output(out + err, p["check"])
    # profile, then the hot kernels' inputs
    prof = os.path.join(d, ".kernelsmith", "profile.json")
    os.makedirs(os.path.dirname(prof), exist_ok=True)
    rc, out, err = sh([ks, "-q", "profile", "--sample", "100", "-o", prof, "--", exe] + p["args"],
                      d, L("03-profile.log"))
    kernels = hot_kernels(prof)
    r["hot_kernels"] = kernels
    if not kernels:
        r["failed"] = "the profile found no kernel (%s)" % (err.strip().splitlines() or ["?"])[-1]
        return r
    rc, out, err = sh([ks, "-q", "profile", "--sample", "100", "-o", prof, "--capture",
                       ",".join(kernels), "--", exe] + p["args"], d, L("04-capture.log"))
    rc, out, err = sh([ks, "optimize", "--profile", prof, "--top", str(len(kernels)),
                       "--max-seconds", str(seconds * len(kernels)), "--json", "."], d,
                      L("05-optimize.log"), timeout=seconds * len(kernels) * 3 + 300)
    try:
        opt = json.loads(out)
    except Exception:
        opt = {"kernels": []}
        r["optimize_error"] = (err.strip().splitlines() or ["no JSON"])[-1]
    r["kernels"] = [{"kernel": k.get("kernel"), "status": k.get("status"),
                     "verdict": k.get("verdict"), "speedup": k.get("speedup"),
                     "inputs": k.get("inputs"), "techniques": k.get("techniques"),
                     "baseline_ms": k.get("baseline_ms"), "best_ms": k.get("best_ms"),
                     "bandwidth_fraction": k.get("bandwidth_fraction"), "bound": k.get("bound"),
                     "race": k.get("race"), "evaluated": k.get("evaluated"),
                     "wrong": k.get("wrong"), "note": k.get("note")}
                    for k in opt.get("kernels", [])]
    fast = [k for k in r["kernels"] if k["verdict"] == "FAST"]
    r["fast_winners"] = len(fast)
    r["fast_winners_1_2x"] = sum(1 for k in fast if (k["speedup"] or 0) >= 1.2)
    # apply
    rc, out, err = sh([ks, "apply", "--write", "."], d, L("06-apply.log"))
    r["apply_rc"] = rc
    r["dispatched_sites"] = sum(int(m) for m in re.findall(r"(\d+) launch sites? dispatched", out))
    r["variants_added"] = sum(int(m) for m in re.findall(r": (\d+) variants?,", out))
    r["left_as_written"] = [l.split("warning: ", 1)[-1] for l in err.splitlines()
                            if "left as written" in l or "not applied" in l]
    patched = ""
    for f in p["sources"]:
        patched += open(os.path.join(d, f), errors="replace").read()
    dispatched = set(re.findall(r'static ksrt::site ks_site\("([^"]+)"', patched))
    r["kernels_dispatched"] = sorted(dispatched)
    r["winners_not_dispatched"] = sorted({k["kernel"] for k in fast} - dispatched -
                                         {k.split("::")[-1] for k in dispatched})
    # rebuild and check
    rc, out, err = sh(cmd, d, L("07-rebuild.log"))
    if rc:
        r["check_after"] = False
        r["failed"] = "the patched program does not build: " + (err.strip().splitlines() or ["?"])[-1]
        return r
    rc, out, err = sh([exe] + p["args"], d, L("08-run-patched.log"))
    r["check_after"] = rc == 0 and check_output(out + err, p["check"])
    # verify: the GPU time inside the program, variants on and off
    vj = os.path.join(d, ".kernelsmith", "verify.json")
    rc, out, err = sh([ks, "verify", "-o", vj, "--", exe] + p["args"], d, L("09-verify.log"))
    r["verify_rc"] = rc
    try:
        v = json.load(open(vj))
        r["verify"] = v.get("kernels", [])
    except Exception:
        r["verify"] = []
        r["verify_error"] = (err.strip().splitlines() or ["no JSON"])[-1]
    # the launcher: the same compile through kernelsmith-cc, the sources as committed
    rc, out, err = sh([ks, "revert"], d, L("10-revert.log"))
    r["revert_clean"] = subprocess.run(["git", "diff", "--quiet"], cwd=d).returncode == 0
    objs = []
    lrc = 0
    for f in p["sources"]:
        o = f + ".o"
        objs.append(o)
        c = [ks, nvcc, "-O3", "-arch=sm_90"] + p["flags"] + ["-c", f, "-o", o]
        lrc |= sh(c, d, L("11-launcher-%s.log" % f))[0]
    lrc |= sh([nvcc, "-arch=sm_90", "-o", "prog"] + objs + libs, d, L("12-link.log"))[0]
    copies = ""
    for f in p["sources"]:
        cp = launcher_copy(d, f + ".o")
        if os.path.exists(cp):
            copies += open(cp, errors="replace").read()
    r["launcher_kernels_dispatched"] = sorted(set(re.findall(r'static ksrt::site ks_site\("([^"]+)"', copies)))
    r["launcher_sites"] = copies.count("ks_site.take(")
    r["apply_sites"] = patched.count("ks_site.take(")
    r["launcher_same_as_apply"] = r["launcher_sites"] == r["apply_sites"] and \
        r["launcher_kernels_dispatched"] == r["kernels_dispatched"]
    _, sout, _ = sh([ks, "stats"], d, L("13-stats.log"))
    r["launcher_stats"] = sout.strip().splitlines()[-1:] if sout.strip() else []
    if not lrc:
        rc, out, err = sh([exe] + p["args"], d, L("14-run-launcher.log"))
        r["check_launcher"] = rc == 0 and check_output(out + err, p["check"])
    return r


def table(rows):
    lines = ["| program | hot kernels | FAST (>=1.2x) | dispatched | check before/after/launcher | "
             "search | in program | launcher = apply | failed; left as written |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("failed") and "kernels" not in r:
            lines.append("| %s | %s | - | - | %s | - | - | - | %s |" % (
                r["program"], ", ".join(r.get("hot_kernels", [])) or "-",
                "PASS" if r.get("check_before") else "FAIL", r["failed"]))
            continue
        s = geomean([k["speedup"] for k in r.get("kernels", []) if k.get("verdict") == "FAST"])
        ins = geomean([k.get("speedup") for k in r.get("verify", [])
                       if k.get("verdict") in ("faster", "not faster", "short of the search")])
        checks = "/".join("PASS" if r.get(c) else ("-" if c not in r else "FAIL")
                          for c in ("check_before", "check_after", "check_launcher"))
        lines.append("| %s | %d | %d (%d) | %d | %s | %s | %s | %s | %s |" % (
            r["program"], len(r.get("hot_kernels", [])), r.get("fast_winners", 0),
            r.get("fast_winners_1_2x", 0), len(r.get("kernels_dispatched", [])), checks,
            "%.2fx" % s if s else "-", "%.2fx" % ins if ins else "-",
            "yes" if r.get("launcher_same_as_apply") else "NO",
            "; ".join(([r["failed"][:200]] if r.get("failed") else []) +
                      [x[:160] for x in r.get("left_as_written", [])]) or "-"))
    return "\n".join(lines)


def write_markdown(base, summary):
    """The Markdown summary of a run (or of several merged): both tables."""
    rows = summary["programs"]
    dev, stamp, args_seconds = summary["device"], summary["date"], summary["seconds_per_kernel"]
    fast = sum(r.get("fast_winners", 0) for r in rows)
    disp = sum(len(set(r.get("kernels_dispatched", [])) & {k["kernel"] for k in r.get("kernels", [])
                                                          if k.get("verdict") == "FAST"})
               for r in rows)
    with open(base + ".md", "w") as f:
        f.write("# The whole user path (%s, %s)\n\n`%s`, %d s of search per hot kernel.\n\n"
                % (dev, stamp, summary["command"], args_seconds))
        f.write(table(rows) + "\n\n")
        f.write("FAST winners: %d; dispatched by apply: %d.\n\n" % (fast, disp))
        # What the search reached per kernel, against the device's measured
        # copy bandwidth (bytes the launch must move over the time).
        f.write("| program | kernel | base ms | best ms | search | of copy bandwidth | bound | "
                "evaluated | WRONG | techniques |\n|---|---|---:|---:|---:|---:|---|---:|---:|---|\n")
        for r in rows:
            for k in r.get("kernels", []):
                bw = k.get("bandwidth_fraction")
                bound = k.get("bound")
                if isinstance(bound, dict):
                    bound = bound.get("kind") or bound.get("bound") or bound.get("text")
                f.write("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                    r["program"], k.get("kernel"),
                    "%.4f" % k["baseline_ms"] if k.get("baseline_ms") else "-",
                    "%.4f" % k["best_ms"] if k.get("best_ms") else "-",
                    "%.2fx" % k["speedup"] if k.get("speedup") else "-",
                    "%.0f%%" % (100 * bw) if bw else "-", bound or "-",
                    k.get("evaluated", "-"), k.get("wrong", "-"), k.get("techniques") or "-"))
        f.write("\n")
        f.write("| program | kernel | search | in the program | verdict | cause | sites |\n|---|---|---|---|---|---|---|\n")
        for r in rows:
            for k in r.get("verify", []):
                f.write("| %s | %s | %s | %s | %s | %s | %s |\n" % (
                    r["program"], k.get("kernel"), "%.2fx" % k["search_speedup"] if k.get("search_speedup") else "-",
                    "%.2fx" % k["speedup"] if k.get("speedup") else "-", k.get("verdict"),
                    k.get("cause_detail") or k.get("cause") or "-",
                    "; ".join("%s %s" % (x.get("where"), x.get("paths")) for x in k.get("sites", []))))
    return fast, disp


def merge(out, parts):
    """One result from the JSON of several runs of the same day and device
    (a run split over several commands): programs in the order given, a
    program measured twice kept from the last part that has it."""
    runs = [json.load(open(p)) for p in parts]
    rows = {}
    for r in runs:
        for x in r["programs"]:
            rows.pop(x["program"], None)
            rows[x["program"]] = x
    summary = {"device": runs[-1]["device"], "date": runs[-1]["date"],
               "command": "; ".join(r["command"] for r in runs),
               "seconds_per_kernel": runs[-1]["seconds_per_kernel"], "programs": list(rows.values())}
    base = out[:-5] if out.endswith(".json") else out
    json.dump(summary, open(base + ".json", "w"), indent=1)
    fast, disp = write_markdown(base, summary)
    print(table(summary["programs"]))
    print("FAST winners: %d; dispatched by apply: %d" % (fast, disp))
    print("wrote %s.json and .md" % base)


def tools():
    """The tool, nvcc, the GPU's name and its label for result file names."""
    ks = os.path.realpath(os.environ.get("KS_BIN", os.path.join(ROOT, "build/cli/kernelsmith-cc")))
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    try:
        dev = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip().splitlines()
    except OSError:
        dev = []
    dev = dev[0] if dev else "no GPU"
    return ks, nvcc, dev, dev.replace("NVIDIA ", "").replace(" ", "-").lower()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("KS_E2E_SECONDS", "30")),
                    help="search seconds per hot kernel")
    ap.add_argument("--only", default="")
    ap.add_argument("--sets", default="legacy,apps,polybench")
    ap.add_argument("--polybench", default=os.environ.get("KS_POLYBENCH", ""))
    ap.add_argument("--llmc", default=os.environ.get("KS_LLMC", ""),
                    help="a checkout of karpathy/llm.c (the llmc set)")
    ap.add_argument("--samples", default=os.environ.get("KS_SAMPLES", ""),
                    help="a checkout of NVIDIA/cuda-samples (the samples set)")
    ap.add_argument("--results", default=os.environ.get("KS_RESULTS", os.path.join(ROOT, "bench/results")))
    ap.add_argument("--work", default=os.path.join(ROOT, "bench/out/e2e"))
    ap.add_argument("--merge", nargs="+", metavar=("OUT", "PART"),
                    help="write OUT.json and OUT.md from the JSON of several runs, and stop")
    args = ap.parse_args()
    if args.merge:
        return merge(args.merge[0], args.merge[1:])
    ks, nvcc, dev, label = tools()
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.results, exist_ok=True)
    stamp = datetime.date.today().isoformat()
    rows = []
    base = os.path.join(args.results, "e2e-%s-%s" % (label, stamp))
    chosen = list(programs(args))
    if not chosen:
        sys.exit("e2e.py: no program of --sets %s matches --only %s" % (args.sets, args.only))
    for p in chosen:
        t0 = time.time()
        try:
            r = run_program(p, ks, nvcc, args.work, args.seconds)
        except Exception as e:  # a bug of the bench: said, and the rest goes on
            r = {"program": p["name"], "set": p["set"], "failed": "bench error: %r" % e}
        r["seconds"] = round(time.time() - t0, 1)
        rows.append(r)
        print(table([r]).splitlines()[-1], flush=True)
        summary = {"device": dev, "date": stamp, "command": "bench/e2e/e2e.py " + " ".join(sys.argv[1:]),
                   "seconds_per_kernel": args.seconds, "programs": rows}
        json.dump(summary, open(base + ".json", "w"), indent=1)
    fast, disp = write_markdown(base, summary)
    print("\n" + table(rows))
    print("FAST winners: %d; dispatched by apply: %d" % (fast, disp))
    print("wrote %s.json and .md" % base)


if __name__ == "__main__":
    main()
