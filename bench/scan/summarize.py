#!/usr/bin/env python3
"""Summarise the runs of bench/scan/run.sh: check the counts against the
generator's manifest, print the table, write the results JSON."""
import argparse
import collections
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys

TARGET_FILES_PER_S = 4.0  # default configuration, on a 2-core machine


def gnu_time(path):
    """Wall seconds and max RSS (KiB) from a `/usr/bin/time -v` report."""
    text = open(path).read()
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", text)
    h, m, s = wall.groups()
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    return int(h or 0) * 3600 + int(m) * 60 + float(s), int(rss.group(1))


def check_counts(name, scan, manifest):
    """Dies, naming each file that differs, unless the scan found exactly
    what the generator wrote."""
    s = scan["summary"]
    want = {"files": manifest["files"], "files_with_errors": 0,
            "kernels": manifest["kernels"], "launches": manifest["launches"]}
    got = {k: s[k] for k in want}
    if got == want:
        return
    print(f"\nFAIL: scan '{name}' found {got}, the generator wrote {want}", file=sys.stderr)
    kernels = collections.Counter(k["file"] for k in scan["kernels"])
    launches = collections.Counter(l["file"] for l in scan["launches"])
    files = [dict(f) for f in manifest["per_file"]]
    files.append({"path": manifest["header"]["path"], "kernels": manifest["header"]["kernels"],
                  "launches": manifest["header"]["launches"]})
    for f in files:
        if (kernels[f["path"]], launches[f["path"]]) != (f["kernels"], f["launches"]):
            print(f"  {f['path']}: kernels {kernels[f['path']]} (want {f['kernels']}), "
                  f"launches {launches[f['path']]} (want {f['launches']})", file=sys.stderr)
    for f in scan["files"]:
        for d in f["diagnostics"][:3]:
            print(f"  {d['file']}:{d['line']}: {d['severity']}: {d['message']}", file=sys.stderr)
    sys.exit(1)


def machine(doctor_path):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), platform.processor() or None)
    mem = next((int(l.split()[1]) // 1024 for l in open("/proc/meminfo")
                if l.startswith("MemTotal")), None)
    try:
        doctor = json.load(open(doctor_path))
    except (OSError, ValueError):
        doctor = {}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        commit, dirty = None, None
    return {"cpu_model": cpu, "cores": os.cpu_count(), "memory_mib": mem,
            "kernel": platform.release(),
            "libclang": (doctor.get("libclang") or {}).get("version"),
            "cuda_toolkit": (doctor.get("toolkit") or {}).get("version"),
            "kernelsmith_version": doctor.get("version"),
            "git_commit": commit or None, "git_dirty": dirty}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--configs", nargs="+", required=True, help="name:arguments")
    ap.add_argument("--repeat", type=int, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    manifest = json.load(open(a.manifest))

    results = []
    for config in a.configs:
        name, args = config.split(":", 1)
        runs = []
        for i in range(1, a.repeat + 1):
            scan = json.load(open(os.path.join(a.runs, f"{name}.{i}.json")))
            check_counts(name, scan, manifest)
            wall, rss = gnu_time(os.path.join(a.runs, f"{name}.{i}.time"))
            parse = [f["parse_ms"] for f in scan["files"]]
            runs.append({"wall_s": round(wall, 3), "max_rss_mib": round(rss / 1024, 1),
                         "scan_wall_ms": round(scan["summary"]["wall_ms"], 1),
                         "parse_ms_sum": round(sum(parse), 1), "parse_ms_max": round(max(parse), 1),
                         "files_with_pch": sum(f["precompiled_headers"] for f in scan["files"])})
        wall = statistics.median(r["wall_s"] for r in runs)
        s = scan["summary"]
        row = {"config": name, "args": (args.split() if args else []) + ["--no-compdb"],
               "files": s["files"], "kernels": s["kernels"], "launches": s["launches"],
               "wall_s_median": wall, "files_per_s": round(s["files"] / wall, 2),
               "peak_rss_mib": max(r["max_rss_mib"] for r in runs), "runs": runs}
        if name == "default":
            row["target_files_per_s"] = TARGET_FILES_PER_S
            row["pass"] = row["files_per_s"] >= TARGET_FILES_PER_S
        results.append(row)

    print(f"\n{'configuration':<14}{'files':>6}{'kernels':>9}{'launches':>10}{'wall s':>9}"
          f"{'files/s':>9}{'peak RSS MiB':>14}  target >= {TARGET_FILES_PER_S:g} files/s")
    for r in results:
        verdict = ("PASS" if r["pass"] else "FAIL") if "pass" in r else "-"
        print(f"{r['config']:<14}{r['files']:>6}{r['kernels']:>9}{r['launches']:>10}"
              f"{r['wall_s_median']:>9.2f}{r['files_per_s']:>9.1f}{r['peak_rss_mib']:>14.0f}  {verdict}")

    report = {
        "benchmark": "scan", "date": datetime.date.today().isoformat(), "label": a.label,
        "machine": machine(os.path.join(a.runs, "doctor.json")), "binary": a.bin,
        "tree": {k: manifest[k] for k in ("generator", "seed", "files", "lines_total", "kernels",
                                          "launches", "launches_chevron", "launches_runtime_api")},
        "repeat": a.repeat, "counts_match_manifest": True, "results": results,
    }
    with open(a.out, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    print(f"\nwrote {a.out}")
    default = next(r for r in results if r["config"] == "default")
    sys.exit(0 if default["pass"] else 1)


if __name__ == "__main__":
    main()
