#!/usr/bin/env python3
"""Summarise the runs of bench/fuzz/run.sh: executions, coverage (libFuzzer's
cov: and ft: when the seeds were loaded and at the end) and findings (the
files libFuzzer wrote, each with its kind and the first frame of its stack
outside the sanitizers and libFuzzer) per harness; writes OUT.json and
OUT.md and prints the table."""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import subprocess

STATUS = re.compile(r"^#(\d+)\s+(\w+)\s+cov: (\d+) ft: (\d+)(?: corp: (\d+)/(\S+))?")
FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ in (.+?) (\S+?)(?: \(BuildId: \w+\))?$")
SKIP_FN = re.compile(r"^(__asan|__interceptor|__sanitizer|__ubsan|__lsan|__msan|fuzzer::|"
                     r"__libc|__GI_|abort|raise|gsignal|fuzz_fail_|malloc|calloc|realloc|free|"
                     r"strlen|strcmp|strncmp|memcmp|memcpy|memmove|memset|strdup|strndup|printf|"
                     r"vsnprintf|snprintf|operator new|_start|main$)")


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def first_frame(lines):
    """The first frame of the first stack in the project's own code (its path
    under the repository; the harness helpers' abort() not counted), else
    the first outside the sanitizers, libFuzzer and libc."""
    root = os.getcwd() + os.sep
    fallback = None
    for line in lines:
        m = FRAME.match(line)
        if not m:
            continue
        fn, where = m.group(1), m.group(2)
        if SKIP_FN.match(fn):
            continue
        if where.startswith(root) and not where.startswith(root + "tests/fuzz/fuzz_util.c"):
            return "%s %s" % (fn, where[len(root):])
        if not fallback and "compiler-rt" not in where and not where.startswith("(") and \
                not where.startswith("nptl/") and "/libc" not in where:
            fallback = "%s %s" % (fn, where)
    return fallback


def finding(log_lines, rc, work):
    text = "\n".join(log_lines)
    artifact = None
    for line in log_lines:
        m = re.search(r"Test unit written to (\S+)", line)
        if m:
            artifact = m.group(1)
    kind = None
    m = re.search(r"fuzz invariant broken: (.*)", text)
    if m:
        kind = "invariant: " + m.group(1)
    m2 = re.search(r"^(\S+:\d+:\d+): runtime error: (.*)$", text, re.M)
    m3 = re.search(r"==\d+==\s*ERROR: (\w+): ([\w-]+(?: on [\w-]+)?)", text)
    if not kind and m2:
        kind = "UBSan: " + m2.group(2)
    elif not kind and m3:
        kind = "%s: %s" % (m3.group(1), m3.group(2))
    if not kind:
        m4 = re.search(r"SUMMARY: (.*)", text)
        kind = m4.group(1) if m4 else "exit status %d" % rc
    frame = first_frame(log_lines)
    if not frame and m2:
        frame = m2.group(1)
    return {"kind": kind.strip(), "first_frame": frame,
            "file": os.path.relpath(artifact) if artifact else None, "exit_status": rc}


def harness(name, work, per):
    d = os.path.join(work, name)
    logs = sorted(glob.glob(os.path.join(d, "logs", "run-*.log")),
                  key=lambda p: int(re.search(r"run-(\d+)", p).group(1)))
    h = {"name": name, "seconds_given": per, "seconds": 0, "runs": len(logs), "executions": 0,
         "seeds": len(os.listdir(os.path.join("tests", "fuzz", "corpus", name))),
         "cov_seeds": None, "ft_seeds": None, "cov": None, "ft": None,
         "corpus_units": None, "corpus_size": None, "findings": []}
    for log in logs:
        lines = open(log, errors="replace").read().split("\n")
        rc, secs = (int(x) for x in open(log[:-4] + ".rc").read().split())
        h["seconds"] += secs
        units, last = None, None
        for line in lines:
            m = STATUS.match(line)
            if m:
                last = m
                if m.group(2) == "INITED" and h["cov_seeds"] is None:
                    h["cov_seeds"], h["ft_seeds"] = int(m.group(3)), int(m.group(4))
            m = re.match(r"stat::number_of_executed_units: (\d+)", line)
            if m:
                units = int(m.group(1))
        if units is None and last:
            units = int(last.group(1))
        h["executions"] += units or 0
        if last:
            h["cov"], h["ft"] = int(last.group(3)), int(last.group(4))
            if last.group(5):
                h["corpus_units"], h["corpus_size"] = int(last.group(5)), last.group(6)
        if rc:
            f = finding(lines, rc, work)
            f["log"] = os.path.relpath(log)
            h["findings"].append(f)
    h["exec_per_s"] = round(h["executions"] / h["seconds"]) if h["seconds"] else None
    distinct = {}
    for f in h["findings"]:
        distinct.setdefault((f["kind"], f["first_frame"]), f)
    h["distinct_findings"] = len(distinct)
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--harnesses", nargs="+", required=True)
    ap.add_argument("--seconds", type=int, required=True)
    ap.add_argument("--per", type=int, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--note", default="")
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    cores = os.cpu_count()
    cpu = ""
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                   if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    short = a.seconds < 3600
    note = a.note
    if short:
        note = ("A short run: %d s in all on %d cores, not the hour the benchmark is for. %s"
                % (a.seconds, cores, note)).strip()
    commit = sh("git", "rev-parse", "--short", "HEAD")
    if sh("git", "status", "--porcelain", "--untracked-files=no"):
        commit += " (with uncommitted changes)"
    res = {
        "benchmark": "fuzz",
        "date": datetime.date.today().isoformat(),
        "label": a.label,
        "short_run": short,
        "note": note,
        "machine": {"cores": cores, "cpu": cpu, "os": platform.platform()},
        "compiler": sh("clang", "--version").split("\n")[0],
        "commit": commit,
        "seconds_total": a.seconds,
        "seconds_per_harness": a.per,
        "harnesses": [harness(n, a.work, a.per) for n in a.harnesses],
    }
    with open(a.out + ".json", "w") as f:
        json.dump(res, f, indent=2)
        f.write("\n")

    md = ["# Fuzzing the parsers (%s, %s)" % (a.label, res["date"]), ""]
    if note:
        md += ["**%s**" % note, ""]
    md += ["`bench/fuzz/run.sh` with `KS_FUZZ_SECONDS=%d`: each harness of `tests/fuzz` fuzzed by "
           "libFuzzer for %d s in one process, with ASan and UBSan, from its seed corpus and "
           "dictionary. Machine: %d cores (%s); %s; commit %s." %
           (a.seconds, a.per, cores, cpu or "unknown CPU", res["compiler"], commit), "",
           "| harness | seconds | executions | exec/s | seeds | corpus at the end | "
           "cov (seeds, end) | ft (seeds, end) | findings |",
           "|---|---|---|---|---|---|---|---|---|"]
    for h in res["harnesses"]:
        md.append("| %s | %d | %d | %s | %d | %s | %s, %s | %s, %s | %d |" % (
            h["name"], h["seconds"], h["executions"], h["exec_per_s"], h["seeds"],
            "%s units, %s" % (h["corpus_units"], h["corpus_size"]) if h["corpus_units"] else "-",
            h["cov_seeds"], h["cov"], h["ft_seeds"], h["ft"], len(h["findings"])))
    md.append("")
    found = [(h["name"], f) for h in res["harnesses"] for f in h["findings"]]
    if found:
        md += ["## Findings", "", "| harness | kind | first frame | file |", "|---|---|---|---|"]
        for name, f in found:
            md.append("| %s | %s | `%s` | `%s` |" % (name, f["kind"].replace("|", "\\|"),
                                                     f["first_frame"], f["file"]))
        md += ["", "Reproduce one with `%s/fuzz_NAME FILE`." % a.bin_dir, ""]
    else:
        md += ["No finding: no crash, sanitizer report, broken invariant, timeout (over the "
               "run's per-input limit) or out-of-memory.", ""]
    md += ["`cov` counts the coverage points (edges) libFuzzer saw, `ft` its features (edges "
           "with hit counts, comparisons); the first number is after the seed corpus was run, "
           "the second at the end.", ""]
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))
    print("wrote %s.json and %s.md" % (a.out, a.out))


if __name__ == "__main__":
    main()
