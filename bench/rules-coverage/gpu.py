#!/usr/bin/env python3
"""Rules coverage, GPU part: per kernel family, what a rules-only search
makes of the kernels and how near the physical floor it gets.

usage: bench/rules-coverage/gpu.py [--sets NAME,...] [--ext DIR] [--seconds S]
                                   [--rounds N] [--results DIR] [--work DIR]

For each code base (coverage.py's but testdata/frontend), `kernelsmith-cc optimize
--proposer rules --json` (a fresh store, --max-seconds S per code base);
for every kernel it timed, the timed size set of its spec (`spec --json`:
bytes_min, flops, the sizes) gives the floor: max(bytes / copy bandwidth,
FLOPs / fp32 FMA rate), both measured in the same run by ceilings.cu
(cudaMemcpy device to device; an FMA kernel), built here with nvcc. Each
kernel: baseline and best time, speedup, floor / best ("of floor"); a
matmul also beside cuBLAS's SGEMM at its size (M, N, K from the spec, timed
by the same program, linked with -lcublas). Then per family: kernels,
geometric-mean speedup, median fraction of the floor, geometric mean of
best / cuBLAS. Writes bench/results/rules-coverage-gpu-<gpu>-<date>.json and
.md. Without a GPU (no nvidia-smi, or it lists none) or without nvcc it says
so and exits 77.

The binary: KS_BIN, else the bundle of scripts/device-bundle.sh (unpacked
from .bundle/ks-bundle.tar.xz into /tmp/ks-bundle when it is there), else
build/cli/kernelsmith-cc.
"""
import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import coverage  # noqa: E402

ROOT = coverage.ROOT
BUNDLE = "/tmp/ks-bundle"


def skip(why):
    print(f"rules-coverage --gpu: skipped: {why}")
    sys.exit(77)


def binary():
    if os.environ.get("KS_BIN"):
        return os.environ["KS_BIN"]
    tarball = os.path.join(ROOT, ".bundle/ks-bundle.tar.xz")
    if not os.path.exists(f"{BUNDLE}/bin/kernelsmith-cc") and os.path.exists(tarball):
        os.makedirs(BUNDLE, exist_ok=True)
        subprocess.run(["tar", "-C", BUNDLE, "-xJf", tarball], check=True)
    if os.path.exists(f"{BUNDLE}/bin/kernelsmith-cc"):
        # As scripts/gpu-e2e.sh runs the bundle.
        os.environ["LD_LIBRARY_PATH"] = f"{BUNDLE}/lib" + (
            ":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")
        os.environ.setdefault("KERNELSMITH_CLANG_RESOURCE_DIR", f"{BUNDLE}/clang")
        return f"{BUNDLE}/bin/kernelsmith-cc"
    return os.path.join(ROOT, "build/cli/kernelsmith-cc")


def find_nvcc():
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    for c in (os.path.join(cuda, "bin/nvcc"), shutil.which("nvcc")):
        if c and os.access(c, os.X_OK):
            return c
    return None


def have_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "no nvidia-smi"
    r = subprocess.run([smi, "-L"], capture_output=True, text=True)
    if r.returncode or "GPU " not in r.stdout:
        return "nvidia-smi lists no GPU" + (f" ({r.stderr.strip()})" if r.stderr.strip() else "")
    return None


def build_ceilings(nvcc, work):
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ceilings.cu")
    exe = os.path.join(work, "ceilings")
    for arch in ("-arch=native", "-arch=sm_90"):
        r = subprocess.run([nvcc, "-O3", arch, "-o", exe, src, "-lcublas"], capture_output=True, text=True)
        if r.returncode == 0:
            return exe, True
    r = subprocess.run([nvcc, "-O3", "-arch=native", "-DKS_NO_CUBLAS", "-o", exe, src],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"nvcc cannot build {src}:\n{r.stderr}")
    print("cuBLAS did not link; no SGEMM times", file=sys.stderr)
    return exe, False


def ceilings(exe, sizes=()):
    r = subprocess.run([exe, *[f"{m}x{n}x{k}" for m, n, k in sizes]], capture_output=True, text=True,
                       timeout=600)
    if r.returncode:
        sys.exit(f"{exe}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def mnk(vars_, flops):
    """A matmul's M, N, K: from the spec's sizes, else a cube of its FLOPs."""
    low = {k.lower(): v for k, v in vars_.items()}
    for keys in (("m", "n", "k"), ("ni", "nj", "nk"), ("rows", "cols", "inner")):
        try:
            return tuple(int(float(low[x])) for x in keys)
        except (KeyError, ValueError):
            pass
    if flops:
        n = round((flops / 2) ** (1 / 3))
        return (n, n, n)
    return None


def spec_of(ks, name, path, flags):
    r = subprocess.run([ks, "-q", "spec", "--json", "--no-compdb", *flags, name, path],
                       capture_output=True, text=True)
    try:
        d = json.loads(r.stdout)
    except ValueError:
        return None
    timed = [w for w in d.get("workloads", []) if w.get("timed")] or d.get("workloads", [])
    if not timed:
        return None
    size = timed[0].get("size")
    vars_ = next((s.get("vars", {}) for s in d.get("spec", {}).get("sizes", []) if s.get("name") == size), {})
    return {"size": size, "bytes": timed[0].get("bytes_min") or 0, "flops": timed[0].get("flops") or 0,
            "vars": vars_}


def recheck(ks, name, winner, path, flags, work):
    r = subprocess.run([ks, "-q", "check", name, "--variant", winner, "--seed", "99", "--json",
                        "--cache-dir", os.path.join(work, "recheck-cache"), "--no-compdb", *flags, path],
                       capture_output=True, text=True)
    try:
        return json.loads(r.stdout).get("verdict", "ERROR")
    except ValueError:
        return "ERROR"


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ext", default=os.environ.get("KS_COVERAGE_EXT", os.path.join(ROOT, ".ext")))
    ap.add_argument("--sets", default=os.environ.get("KS_COVERAGE_SETS", ""))
    ap.add_argument("--seconds", type=int, default=int(os.environ.get("KS_COVERAGE_SECONDS", "120")),
                    help="search seconds per code base")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--results", default=os.environ.get("KS_RESULTS", os.path.join(ROOT, "bench/results")))
    ap.add_argument("--work", default="")
    ap.add_argument("--label", default=os.environ.get("KS_LABEL", ""))
    args = ap.parse_args()
    why = have_gpu()
    if why:
        skip(why)
    nvcc = find_nvcc()
    if not nvcc:
        skip("no nvcc (set CUDA_HOME)")
    ks = binary()
    if not os.access(ks, os.X_OK):
        sys.exit(f"no binary at {ks}")
    work = args.work or tempfile.mkdtemp(prefix="ks-coverage-gpu-")
    os.makedirs(work, exist_ok=True)
    exe, _ = build_ceilings(nvcc, work)
    t0 = time.time()
    # testdata/frontend's kernels test the parser, not the GPU.
    sets = [s for s in args.sets.split(",") if s] or [
        s for s in coverage.default_sets(args.ext) if s != "frontend"]
    rows, runs = [], {}
    for name, d, flags in coverage.codebases(args.ext, sets):
        if d is None:
            continue
        sc = coverage.scan(ks, d, flags, open(os.path.join(work, f"{name}.scan.log"), "w"))
        where = {k["qualified_name"]: k for k in sc.get("kernels", [])}
        root = sc.get("root") or d
        out = os.path.join(work, f"{name}.optimize.json")
        cmd = [ks, "-q", "optimize", "--json", "--proposer", "rules", "--store",
               os.path.join(work, f"store-{name}"), "--rounds", str(args.rounds),
               "--max-seconds", str(args.seconds), "--no-compdb", *flags, d]
        print(f"{name}: {' '.join(cmd[1:])}", file=sys.stderr)
        with open(out, "w") as f, open(os.path.join(work, f"{name}.optimize.log"), "w") as log:
            rc = subprocess.run(cmd, stdout=f, stderr=log).returncode
        try:
            opt = json.load(open(out))
        except ValueError:
            runs[name] = {"rc": rc, "error": "optimize wrote no JSON (see its log)"}
            continue
        runs[name] = {"rc": rc, "device": opt.get("device"), "kernels": len(opt.get("kernels", []))}
        for k in opt.get("kernels", []):
            kn = k.get("kernel", "")
            sk = where.get(kn) or {}
            file = sk.get("file") or k.get("file") or ""
            row = {"codebase": name, "kernel": kn, "file": file,
                   "family": coverage.family(name, file, kn), "status": k.get("status")}
            if not k.get("baseline_ms"):
                row["note"] = k.get("note", "")
                rows.append(row)
                continue
            row.update(baseline_ms=k["baseline_ms"], best_ms=k.get("best_ms") or k["baseline_ms"],
                       speedup=k.get("speedup", 1.0), techniques=k.get("techniques", ""),
                       evaluated=k.get("evaluated", 0), wrong=k.get("wrong", 0))
            if k.get("winner_file"):
                # The winner judged once more by a separate process on fresh
                # inputs: a WRONG here is a wrong variant the search accepted.
                row["recheck"] = recheck(ks, kn, k["winner_file"], d, flags, work)
            sp = spec_of(ks, kn, coverage.kernel_path(root, sk) if sk else d, flags)
            if sp:
                row.update(size=sp["size"], bytes=sp["bytes"], flops=sp["flops"], vars=sp["vars"])
            rows.append(row)
    sizes = sorted({s for s in (mnk(r.get("vars", {}), r.get("flops")) for r in rows
                                if r["family"] == "matmul" and "best_ms" in r) if s})
    ceil = ceilings(exe, sizes)
    bw, fl = ceil["copy_bandwidth"], ceil["flops_fp32"]
    gemm = {(g["m"], g["n"], g["k"]): g["ms"] for g in ceil.get("sgemm", []) if g.get("ok")}
    for r in rows:
        if "best_ms" not in r or not (r.get("bytes") or r.get("flops")):
            continue
        floor_ms = max(r.get("bytes", 0) / bw, r.get("flops", 0) / fl) * 1e3
        r["floor_ms"] = floor_ms
        r["bound"] = "memory" if r.get("bytes", 0) / bw >= r.get("flops", 0) / fl else "compute"
        r["of_floor"] = floor_ms / r["best_ms"]
        r["baseline_of_floor"] = floor_ms / r["baseline_ms"]
        s = mnk(r.get("vars", {}), r.get("flops")) if r["family"] == "matmul" else None
        if s and s in gemm:
            r["cublas_ms"] = gemm[s]
            r["best_over_cublas"] = r["best_ms"] / gemm[s]
    fams = {}
    for r in rows:
        if "best_ms" in r:
            fams.setdefault(r["family"], []).append(r)
    by_family = {}
    for f, rs in sorted(fams.items()):
        of = [r["of_floor"] for r in rs if "of_floor" in r]
        cb = [r["best_over_cublas"] for r in rs if "best_over_cublas" in r]
        by_family[f] = {"kernels": len(rs), "geomean_speedup": geomean([r["speedup"] for r in rs]),
                        "median_of_floor": statistics.median(of) if of else None,
                        "median_baseline_of_floor": statistics.median(
                            [r["baseline_of_floor"] for r in rs if "baseline_of_floor" in r]) if of else None,
                        "geomean_best_over_cublas": geomean(cb)}
    L = [f"device: {ceil['device']}; copy bandwidth {bw / 1e9:.0f} GB/s, fp32 FMA {fl / 1e12:.1f} TFLOP/s"
         f"{'' if ceil.get('cublas') else '; no cuBLAS'}", "",
         "| family | kernels | geomean speedup | median of floor (best) | median of floor (original) | best / cuBLAS |",
         "|---|---:|---:|---:|---:|---:|"]
    pct = lambda x: f"{100 * x:.0f}%" if x is not None else "-"  # noqa: E731
    num = lambda x, u="x": f"{x:.2f}{u}" if x is not None else "-"  # noqa: E731
    for f, g in by_family.items():
        L.append(f"| {f} | {g['kernels']} | {num(g['geomean_speedup'])} | {pct(g['median_of_floor'])} | "
                 f"{pct(g['median_baseline_of_floor'])} | {num(g['geomean_best_over_cublas'])} |")
    timed = [r for r in rows if "best_ms" in r]
    judged = {"kernels": len(timed), "geomean_speedup": geomean([r["speedup"] for r in timed]),
              "variants_judged": sum(r.get("evaluated", 0) for r in timed),
              "variants_wrong": sum(r.get("wrong", 0) for r in timed),
              "winners": sum(1 for r in timed if "recheck" in r),
              "winners_wrong_on_recheck": sum(1 for r in timed if r.get("recheck") == "WRONG"),
              "recheck_errors": sum(1 for r in timed if r.get("recheck") == "ERROR")}
    L += ["", f"All {judged['kernels']} timed kernels: geomean speedup {num(judged['geomean_speedup'])}; "
          f"{judged['variants_judged']} variants judged, {judged['variants_wrong']} of them WRONG (refused); "
          f"{judged['winners']} winners rechecked by `check --seed 99` on fresh inputs: "
          f"{judged['winners_wrong_on_recheck']} WRONG, {judged['recheck_errors']} could not be rechecked."]
    L += ["", "| code base | kernel | family | base ms | best ms | speedup | of floor | bound | cuBLAS ms | "
          "judged / WRONG | recheck | techniques |",
          "|---|---|---|---:|---:|---:|---:|---|---:|---:|---|---|"]
    for r in rows:
        if "best_ms" not in r:
            L.append(f"| {r['codebase']} | {r['kernel']} | {r['family']} | - | - | - | - | - | - | - | - | "
                     f"{r.get('status')}: {r.get('note', '')} |")
            continue
        cub = f"{r['cublas_ms']:.4f}" if "cublas_ms" in r else "-"
        L.append(f"| {r['codebase']} | {r['kernel']} | {r['family']} | {r['baseline_ms']:.4f} | "
                 f"{r['best_ms']:.4f} | {r['speedup']:.2f}x | {pct(r.get('of_floor'))} | "
                 f"{r.get('bound', '-')} | {cub} | {r.get('evaluated', 0)} / {r.get('wrong', 0)} | "
                 f"{r.get('recheck', '-')} | {r.get('techniques') or '-'} |")
    text = "\n".join(L)
    print(text)
    dev = ceil["device"].replace("NVIDIA ", "").replace(" ", "-").lower()
    label = args.label or dev
    date = datetime.date.today().isoformat()
    doc = {"schema": coverage.SCHEMA + ".gpu", "version": 1, "date": date, "label": label,
           "command": "bench/rules-coverage/run.sh --gpu", "seconds_per_codebase": args.seconds,
           "wall_seconds": round(time.time() - t0, 1), "ceilings": ceil, "runs": runs,
           "by_family": by_family, "judged": judged, "kernels": rows}
    os.makedirs(args.results, exist_ok=True)
    base = os.path.join(args.results, f"rules-coverage-gpu-{label}-{date}")
    json.dump(doc, open(base + ".json", "w"), indent=1)
    with open(base + ".md", "w") as f:
        f.write(f"# Rules coverage on the GPU, {label}, {date}\n\n`bench/rules-coverage/run.sh --gpu`,"
                f" {args.seconds} s of rules-only search per code base.\n\n{text}\n")
    print(f"wrote {base}.json")


if __name__ == "__main__":
    main()
