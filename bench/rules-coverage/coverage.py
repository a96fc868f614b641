#!/usr/bin/env python3
"""Rules coverage: every rewrite rule on every kernel of our testdata and of
public code bases checked out beside the project.

usage: bench/rules-coverage/coverage.py [--ext DIR] [--sets NAME,...]
                                        [--results DIR] [--work DIR] [--label L]
                                        [--only-kernels N,...] [--jobs N]

CPU part (no GPU): for each kernel that `scan --json` lists, runs
`kernelsmith-cc rewrite KERNEL --each-rule DIR --compile FILE`: every
rule alone, its variant (or the line saying why it does not apply) and that
variant compiled with NVRTC for sm_90 as the judge compiles it. A kernel the
command refuses before any rule runs (no spec, a slice that fails) counts as
"not tried: <reason>". Refusal reasons are normalized (quoted identifiers,
the kernel's own names and numbers replaced) so that the same reason from
different kernels counts together.

Code bases: testdata/apps, testdata/legacy, testdata/frontend, and under the
ext directory (KS_COVERAGE_EXT, default .ext/): polybench (PolyBench-ACC:
its CUDA/ tree), llm.c (karpathy/llm.c: dev/cuda), cuda-samples
(NVIDIA/cuda-samples: Samples/); a missing one is listed as absent. Any other
directory under ext is scanned as it is.

Writes bench/results/rules-coverage-<label>-<date>.json and .md. The GPU part
(per kernel family: speedup of a rules-only search and the fraction of the
physical floor it reaches; matmul beside cuBLAS) is gpu.py.
"""
import argparse
import collections
import datetime
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEMA = "kernelsmith-cc.rules-coverage"

# Kernel families, first match wins: (family, pattern on the kernel's
# qualified name, pattern on "codebase/file" or None).
FAMILIES = [
    ("softmax", r"softmax", None),
    ("normalization", r"layernorm|layer_norm|rmsnorm|batchnorm|norm_kernel", None),
    ("histogram", r"hist", None),
    ("transpose", r"transpose", None),
    ("scan", r"prefix|scan|add_block_offsets", None),
    ("matmul", r"gemm(?!v)|matmul|mm_kernel|mm\d|syrk|syr2k|doitgen|batched_mm|mm_forward", None),
    ("matmul", r".", r"polybench/.*/(2mm|3mm|gemm|syrk|syr2k|doitgen)/"),
    ("matrix-vector", r"gemv|mvt|atax|bicg|gesummv|gemver|spmv|matvec|mv_kernel", None),
    ("matrix-vector", r".", r"polybench/.*/(atax|bicg|mvt|gesummv|gemver)/"),
    ("stencil", r"stencil|jacobi|fdtd|conv|adi|heat|seidel|laplace", None),
    ("stencil", r".", r"polybench/.*/stencils/"),
    ("reduction", r"reduce|reduction|sum_kernel|mean|std_kernel|dot|norm|argmax|max_kernel", None),
    ("reduction", r".", r"polybench/.*/(covariance|correlation)/"),
    ("factorization", r".", r"polybench/.*/solvers/"),
    ("elementwise", r"saxpy|axpy|gelu|relu|add|scale|residual|copy|fill|mul|bias|elementwise|"
                    r"encoder|permute|cast|silu|swiglu|adam", None),
]


def family(codebase, file, name):
    where = f"{codebase}/{file}"
    for fam, npat, fpat in FAMILIES:
        if re.search(npat, name, re.I) and (fpat is None or re.search(fpat, where, re.I)):
            return fam
    return "other"


def codebases(ext, sets):
    """name, directory to scan, extra scan arguments; None when absent."""
    ext = os.path.realpath(ext)
    known = {
        "apps": (os.path.join(ROOT, "testdata/apps"), []),
        "legacy": (os.path.join(ROOT, "testdata/legacy"), []),
        "frontend": (os.path.join(ROOT, "testdata/frontend"),
                     ["-I", os.path.join(ROOT, "testdata/frontend/include")]),
        "polybench": (os.path.join(ext, "polybench/CUDA"),
                      ["-I", os.path.join(ext, "polybench/CUDA/utilities"),
                       "-DcudaThreadSynchronize=cudaDeviceSynchronize"]),
        "llm.c": (os.path.join(ext, "llm.c/dev/cuda"), ["-I", os.path.join(ext, "llm.c/dev/cuda")]),
        "cuda-samples": (os.path.join(ext, "cuda-samples/Samples"),
                         ["-I", os.path.join(ext, "cuda-samples/Common")]),
    }
    out = []
    for name in sets:
        if name in known:
            d, flags = known[name]
        else:
            d, flags = os.path.join(ext, name), []
        out.append((name, d if os.path.isdir(d) else None, flags))
    return out


def default_sets(ext):
    sets = ["apps", "legacy", "frontend", "polybench", "llm.c", "cuda-samples"]
    if os.path.isdir(ext):
        for d in sorted(os.listdir(ext)):
            if os.path.isdir(os.path.join(ext, d)) and d not in sets:
                sets.append(d)
    return sets


def list_rules(ks):
    out = subprocess.run([ks, "rewrite", "--list"], capture_output=True, text=True, check=True).stdout
    return [l.split()[0] for l in out.splitlines()[1:] if l.strip()]


def scan(ks, d, flags, log):
    r = subprocess.run([ks, "-q", "scan", "--json", "--long", "--no-compdb", *flags, d],
                       capture_output=True, text=True)
    log.write(r.stderr)
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {"kernels": [], "error": (r.stderr.strip().splitlines() or ["scan failed"])[-1]}


def normalize(reason, kernel_names, params=()):
    """The same reason from different kernels, counted together: the
    kernel's names become KERNEL, its long parameter names ID, quoted text 'X',
    numbers N (not the 1 of "1-D")."""
    s = reason.strip()
    for n in sorted((n for n in kernel_names if n), key=len, reverse=True):
        s = re.sub(r"(?<![\w:])" + re.escape(n) + r"(?!\w)", "KERNEL", s)
    # Parameters only where they cannot be an English word or a builtin's
    # member (a, x, y): long names, or with an underscore or a digit.
    for n in sorted((n for n in params if n and n not in kernel_names
                     and (len(n) > 5 or re.search(r"[_\d]", n))), key=len, reverse=True):
        s = re.sub(r"(?<![\w:'.])" + re.escape(n) + r"(?![\w'])", "ID", s)
    s = re.sub(r"(?<![\w.])/[^\s:]*[\w/]", "PATH", s)
    # The host function a launch site sits in.
    s = re.sub(r"(?<=variable of )[A-Za-z_]\w*", "FUNC", s)
    # A quote opens after a non-letter and closes before one: the
    # apostrophes of "kernel's" and "blocks'" are not quotes.
    s = re.sub(r"(?<!\w)'[^']*'(?!\w)", "'X'", s)
    s = re.sub(r"\"[^\"]*\"", "\"X\"", s)
    s = re.sub(r"(?<![\w.])[-+]?\d+(\.\d+)?([eE][-+]?\d+)?(?![\w.]|-D)", "N", s)
    s = re.sub(r"(\S+\.(cu|cuh|h|hpp|cpp|c|kspec)):N(:N)?", "FILE:N", s)
    return s


def refusal(reason):
    """Why a kernel was not tried, grouped: without its location and the
    advice after the first ': ' ("kernel 'X' has no spec")."""
    s = re.sub(r"^(FILE|PATH)(:N)*: ", "", reason)
    parts = s.split(": ")
    # "cannot slice the kernel" says what failed, the part after it why.
    if parts[0].startswith("cannot ") and len(parts) > 1:
        return ": ".join(parts[:2])
    return parts[0]


def kernel_path(root, k):
    """What to scan for one kernel: its own file (a header, or a .cu that
    another .cu includes: its directory, whose sources include it)."""
    f = k["file"] if os.path.isabs(k["file"]) else os.path.join(root, k["file"])
    return f if f.endswith(".cu") and not k.get("in_header") else os.path.dirname(f)


def compile_mode(ks):
    """How this binary's rewrite compiles the variants it writes:
    "stderr" (--compile: a line on stderr for each variant that does not
    compile), or None (an older binary: the compile column stays empty)."""
    h = subprocess.run([ks, "rewrite", "--help"], capture_output=True, text=True).stdout
    if re.search(r"^\s+--compile\b", h, re.M):
        return "stderr"
    return None


COMPILE_ARGS = {"stderr": ["--compile"], None: []}
NOT_COMPILED = re.compile(r"^rewrite: (.*)'s (\S+) variant does not compile: (.*)$")


def original_compiles(ks, root, flags, k, sel):
    """The kernel as it is, compiled by rewrite --compile with no rule."""
    r = subprocess.run([ks, "-q", "rewrite", sel, "--compile", "--no-compdb", *flags,
                        kernel_path(root, k)], capture_output=True, text=True)
    return "ok" if r.returncode == 0 else "failed: " + error_line(r.stderr).split(" does not compile: ")[-1]


def rewrite_one(ks, root, flags, k, sel, work, timeout, mode):
    d = tempfile.mkdtemp(prefix="k", dir=work)
    t0 = time.time()
    try:
        r = subprocess.run([ks, "-q", "rewrite", sel, "--each-rule", d, *COMPILE_ARGS[mode], "--no-compdb",
                            *flags, kernel_path(root, k)], capture_output=True, text=True,
                           timeout=timeout)
        rc, err = r.returncode, r.stderr
    except subprocess.TimeoutExpired:
        rc, err = 124, f"rewrite took more than {timeout} s"
    files = {}
    for p in glob.glob(os.path.join(d, "*.txt")):
        with open(p, errors="replace") as f:
            files[os.path.basename(p)] = f.read()
    shutil.rmtree(d, ignore_errors=True)
    return rc, err, files, time.time() - t0


def error_line(err):
    lines = [l for l in err.strip().splitlines() if l.strip()]
    if not lines:
        return "(no message)"
    # The first error line says why; what follows is detail.
    for l in lines:
        if "error:" in l:
            return re.sub(r"^.*?error:\s*", "", l)
    return lines[-1]


def kernel_result(rules, k, sel, codebase, rc, err, files, seconds, mode, original=None):
    name = k["qualified_name"]
    names = {name, k["name"], name.split("::")[-1]}
    params = {p["name"] for p in k.get("params", [])}
    res = {"codebase": codebase, "kernel": name, "file": k["file"], "line": k.get("line"),
           "family": family(codebase, k["file"], name), "params": sorted(params),
           "seconds": round(seconds, 2)}
    tried = any(f.endswith(".cu.txt") for f in files)
    if not tried:
        raw = error_line(err)
        res.update(status="not tried", reason=refusal(normalize(raw, names, params)), raw_reason=raw)
        return res
    res["status"] = "tried"
    failures = {}
    for line in err.splitlines():
        m = NOT_COMPILED.match(line)
        if m:
            failures[m.group(2)] = "failed: " + m.group(3)
    if rc not in (0, 1) or (rc == 1 and mode == "stderr" and not failures):
        res["error"] = error_line(err)
    pre = sel
    orig = files.get(f"{pre}.original.compile.txt")
    res["original_compile"] = orig.strip() if orig else None
    if mode == "stderr" and original:
        res["original_compile"] = original(bool(failures) or not any(
            not t.startswith("rewrite: ") for n, t in files.items() if n.endswith(".cu.txt")))
    per = {}
    for rule in rules:
        text = files.get(f"{pre}.{rule}.cu.txt")
        if text is None:
            per[rule] = {"applied": False, "reason": "(no result)", "raw_reason": "(no result)"}
            continue
        if text.startswith("rewrite: "):
            first = text.strip().splitlines()[0]
            head = f"rewrite: {rule} does not apply to {name}: "
            raw = first[len(head):] if first.startswith(head) else re.sub(
                r"^rewrite: \S+ does not apply to .*?: ", "", first)
            per[rule] = {"applied": False, "reason": normalize(raw, names, params), "raw_reason": raw}
            continue
        m = re.search(r"kernelsmith-cc techniques:\s*(.*)", text)
        c = files.get(f"{pre}.{rule}.compile.txt")
        if mode == "stderr":
            c = failures.get(rule, "ok")
        per[rule] = {"applied": True, "technique": m.group(1).strip() if m else "",
                     "compile": c.strip() if c else None}
    res["rules"] = per
    return res


def summarize(rules, kernels):
    s = {}
    for rule in rules:
        tried = [k for k in kernels if k["status"] == "tried"]
        applied = [k for k in tried if k["rules"][rule]["applied"]]
        compiled = [k for k in applied if k["rules"][rule].get("compile") == "ok"]
        failed = [k for k in applied if k["rules"][rule].get("compile") not in ("ok", None)]
        reasons = collections.Counter(k["rules"][rule]["reason"] for k in tried
                                      if not k["rules"][rule]["applied"])
        s[rule] = {"tried": len(tried), "applied": len(applied), "compiled": len(compiled),
                   "compile_failed": [{"kernel": k["kernel"], "codebase": k["codebase"],
                                       "original_compile": k.get("original_compile"),
                                       "compile": k["rules"][rule]["compile"]} for k in failed],
                   "refusals": [{"reason": r, "kernels": n} for r, n in reasons.most_common()]}
    return s


def group(kernels, key, rules):
    out = collections.OrderedDict()
    for k in kernels:
        g = out.setdefault(k[key], {"kernels": 0, "tried": 0, "not_tried": collections.Counter(),
                                    "original_compiles": 0, "any_rule_applied": 0,
                                    "applied": collections.Counter(), "compiled": collections.Counter()})
        g["kernels"] += 1
        if k["status"] != "tried":
            g["not_tried"][k["reason"]] += 1
            continue
        g["tried"] += 1
        g["original_compiles"] += k.get("original_compile") == "ok"
        hit = [r for r in rules if k["rules"][r]["applied"]]
        g["any_rule_applied"] += bool(hit)
        for r in hit:
            g["applied"][r] += 1
            g["compiled"][r] += k["rules"][r].get("compile") == "ok"
    for g in out.values():
        g["not_tried"] = [{"reason": r, "kernels": n} for r, n in g["not_tried"].most_common()]
        g["applied"] = {r: g["applied"][r] for r in rules}
        g["compiled"] = {r: g["compiled"][r] for r in rules}
    return out


def tables(doc):
    rules, L = doc["rules"], []
    total = len(doc["kernels"])
    tried = sum(k["status"] == "tried" for k in doc["kernels"])
    L.append(f"kernels: {total}, tried: {tried}, not tried: {total - tried}"
             f" (binary {doc['binary']}, {doc['seconds']:.0f} s)")
    for r in doc["not_tried"][:8]:
        L.append(f"  not tried: {r['reason']}  ({r['kernels']})")
    L.append("")
    L.append("| rule | tried | applied | compiled | top refusals (kernels) |")
    L.append("|---|---:|---:|---:|---|")
    for rule in rules:
        s = doc["by_rule"][rule]
        top = "; ".join(f"{x['reason']} ({x['kernels']})" for x in s["refusals"][:3])
        L.append(f"| {rule} | {s['tried']} | {s['applied']} | {s['compiled']} | {top.replace('|', '/')} |")
    for title, key in (("code base", "by_codebase"), ("family", "by_family")):
        L.append("")
        L.append(f"| {title} | kernels | tried | original compiles | any rule applied | not tried: reason (kernels) | applied (compiled) per rule |")
        L.append("|---|---:|---:|---:|---:|---|---|")
        for name, g in doc[key].items():
            nt = "; ".join(f"{x['reason']} ({x['kernels']})" for x in g["not_tried"][:2]) or "-"
            ap = ", ".join(f"{r} {g['applied'][r]}" + (f" ({g['compiled'][r]})" if g['compiled'][r] != g['applied'][r] else "")
                           for r in rules if g["applied"][r]) or "-"
            L.append(f"| {name} | {g['kernels']} | {g['tried']} | {g['original_compiles']} | "
                     f"{g['any_rule_applied']} | {nt.replace('|', '/')} | {ap} |")
    if doc["absent"]:
        L.append("")
        L.append("absent code bases: " + ", ".join(doc["absent"]))
    return "\n".join(L)


def finish(doc, kernels, rules):
    doc["not_tried"] = [{"reason": r, "kernels": n} for r, n in collections.Counter(
        k["reason"] for k in kernels if k["status"] != "tried").most_common()]
    doc["by_rule"] = summarize(rules, kernels)
    doc["by_codebase"] = group(kernels, "codebase", rules)
    doc["by_family"] = group(kernels, "family", rules)
    doc["kernels"] = kernels


def write(doc, results):
    text = tables(doc)
    print(text)
    os.makedirs(results, exist_ok=True)
    base = os.path.join(results, f"rules-coverage-{doc['label']}-{doc['date']}")
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(base + ".md", "w") as f:
        f.write(f"# Rules coverage, {doc['label']}, {doc['date']}\n\n`bench/rules-coverage/run.sh`"
                f" (code bases: {', '.join(doc['codebases'])}); every rule alone on every kernel, each"
                f" variant compiled with NVRTC for sm_90.\n\n{text}\n")
    print(f"wrote {base}.json")


def report_again(path):
    doc = json.load(open(path))
    kernels, rules = doc["kernels"], doc["rules"]
    for k in kernels:
        names = {k["kernel"], k["kernel"].split("::")[-1]}
        params = set(k.get("params", []))
        if k["status"] != "tried":
            k["reason"] = refusal(normalize(k["raw_reason"], names, params))
            continue
        for v in k["rules"].values():
            if not v["applied"]:
                # Results written before the prefix of a qualified name was cut.
                v["raw_reason"] = re.sub(r"^rewrite: \S+ does not apply to .*?: ", "", v["raw_reason"])
                v["reason"] = normalize(v["raw_reason"], names, params)
    finish(doc, kernels, rules)
    write(doc, os.path.dirname(os.path.abspath(path)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ext", default=os.environ.get("KS_COVERAGE_EXT", os.path.join(ROOT, ".ext")))
    ap.add_argument("--sets", default=os.environ.get("KS_COVERAGE_SETS", ""),
                    help="code bases, comma-separated (default: testdata's and every one under --ext)")
    ap.add_argument("--results", default=os.environ.get("KS_RESULTS", os.path.join(ROOT, "bench/results")))
    ap.add_argument("--work", default="")
    ap.add_argument("--label", default=os.environ.get("KS_LABEL", ""))
    ap.add_argument("--only-kernels", default="", help="only these kernel names (for tests)")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("KS_COVERAGE_JOBS", "1")))
    ap.add_argument("--timeout", type=int, default=300, help="seconds per kernel")
    ap.add_argument("--from-json", default="", help="no rewrites: tables of an earlier results file,"
                    " its reasons normalized again from the raw ones (after a change to normalize())")
    args = ap.parse_args()
    if args.from_json:
        return report_again(args.from_json)
    ks = os.environ.get("KS_BIN", os.path.join(ROOT, "build/cli/kernelsmith-cc"))
    if not os.access(ks, os.X_OK):
        sys.exit(f"no binary at {ks} (build it, or set KS_BIN)")
    sets = [s for s in args.sets.split(",") if s] or default_sets(args.ext)
    work = args.work or tempfile.mkdtemp(prefix="ks-coverage-")
    os.makedirs(work, exist_ok=True)
    rules = list_rules(ks)
    mode = compile_mode(ks)
    only = set(x for x in args.only_kernels.split(",") if x)
    t0 = time.time()
    kernels, absent, scanned = [], [], {}
    log = open(os.path.join(work, "scan.log"), "w")
    for name, d, flags in codebases(args.ext, sets):
        if d is None:
            absent.append(name)
            print(f"{name}: absent", file=sys.stderr)
            continue
        sc = scan(ks, d, flags, log)
        root = sc.get("root") or d
        ks_list = [k for k in sc.get("kernels", []) if not only or k["name"] in only
                   or k["qualified_name"] in only]
        scanned[name] = {"directory": os.path.relpath(d, ROOT) if d.startswith(ROOT) else d,
                         "scan_error": sc.get("error"), "kernels": len(ks_list)}
        # A name two kernels of one file share (overloads, template
        # specializations): the signature picks one.
        count = collections.Counter((k["file"], k["qualified_name"]) for k in ks_list)
        jobs = []
        for k in ks_list:
            sel = k["qualified_name"] if count[(k["file"], k["qualified_name"])] == 1 else k["signature"]
            jobs.append((k, sel))
        print(f"{name}: {len(jobs)} kernels", file=sys.stderr)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            futs = [ex.submit(rewrite_one, ks, root, flags, k, sel, work, args.timeout, mode)
                    for k, sel in jobs]
            for (k, sel), fu in zip(jobs, futs):
                rc, err, files, secs = fu.result()
                # --compile does not compile the original: a variant that
                # compiled says its slice does; else ask once more.
                def original(need, k=k, sel=sel, root=root, flags=flags):
                    return original_compiles(ks, root, flags, k, sel) if need else "ok"
                r = kernel_result(rules, k, sel, name, rc, err, files, secs, mode, original)
                kernels.append(r)
                hits = [x for x in rules if r.get("rules", {}).get(x, {}).get("applied")]
                print(f"  {k['qualified_name']}: " + (f"not tried: {r['raw_reason']}" if r["status"] != "tried"
                      else f"{len(hits)} rules applied"), file=sys.stderr)
    log.close()
    date = datetime.date.today().isoformat()
    label = args.label or f"cpu{os.cpu_count()}"
    doc = {"schema": SCHEMA, "version": 1, "date": date, "label": label,
           "command": "bench/rules-coverage/run.sh", "binary": os.path.relpath(ks, ROOT) if ks.startswith(ROOT) else ks,
           "compile": {"stderr": "NVRTC, sm_90 (rewrite --each-rule --compile)"}.get(mode, "not compiled"),
           "seconds": round(time.time() - t0, 1), "rules": rules, "codebases": scanned, "absent": absent}
    finish(doc, kernels, rules)
    write(doc, args.results)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
