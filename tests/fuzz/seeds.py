#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/NAME/)
from testdata and the tests' fixtures, so that every seed says where it came
from and the corpora can be made again after those change:

    python3 tests/fuzz/seeds.py          # rewrites the generated seeds

  expr     expressions of tests/test_expr.c and of testdata's specs
  spec     every annotation and .kspec section of testdata and
           tests/fixtures, specs of tests/test_spec*.c, a few with a variant
           part (the policies and guards of tests/fixtures/variants)
  capture  capture files shaped as docs/capture-format.md and
           tests/test_capture.c write them (flags byte 1: CRCs fixed up)
  llm      testdata/llm/replies and the replies of tests/test_llm_text.c
  flags    the command lines of tests/test_flags.c and of testdata's
           compile_commands.json, with response files

Generated seeds are named gen-*; others in the directories (regression
seeds of fixed findings, named after what they found) are kept."""
import glob
import json
import os
import re
import shlex
import struct
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
        return f.read()


def c_strings(text):
    """Adjacent C string literals joined and unescaped, in order."""
    out = []
    for m in re.finditer(r'(?:"(?:[^"\\\n]|\\.)*"\s*)+', text):
        parts = re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(0))
        s = "".join(parts)
        try:
            s = s.encode("latin-1", "backslashreplace").decode("unicode_escape")
        except UnicodeDecodeError:
            continue
        out.append(s)
    return out


def write(name, seeds):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    for f in glob.glob(os.path.join(d, "gen-*")):
        os.remove(f)
    seen = set()
    n = 0
    for s in seeds:
        b = s if isinstance(s, bytes) else s.encode("utf-8", "surrogateescape")
        if b in seen or len(b) > 65536:
            continue
        seen.add(b)
        with open(os.path.join(d, "gen-%03d" % n), "wb") as f:
            f.write(b)
        n += 1
    print("%s: %d seeds" % (name, n))


def source_files():
    files = []
    for pat in ("testdata/**/*.cu", "testdata/**/*.cuh", "tests/fixtures/**/*.cu"):
        files += glob.glob(os.path.join(ROOT, pat), recursive=True)
    return sorted(files)


def annotations():
    """The text of every `kernelsmith:` annotation (block or line comments)."""
    out = []
    for path in source_files():
        lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if "kernelsmith:" in line and "kernelsmith-variant" not in line:
                if "/*" in line:
                    j = i
                    while j < len(lines) and "*/" not in lines[j]:
                        j += 1
                    out.append("\n".join(lines[i:j + 1]))
                    i = j + 1
                    continue
                if line.lstrip().startswith("//"):
                    j = i + 1
                    while j < len(lines) and lines[j].lstrip().startswith("//"):
                        j += 1
                    out.append("\n".join(lines[i:j]))
                    i = j
                    continue
            i += 1
    for path in sorted(glob.glob(os.path.join(ROOT, "testdata/**/*.kspec"), recursive=True)):
        for section in re.split(r"(?m)^kernel .*$", open(path).read()):
            if section.strip():
                out.append(section)
    return out


def variant_parts():
    """Policies and guards of the variant files, as the spec harness's part."""
    parts = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/**/*.cu"), recursive=True)):
        text = open(path, encoding="utf-8", errors="replace").read()
        m = re.search(r"kernelsmith-variant:(.*?)\*/", text, re.S)
        if not m:
            continue
        lines = []
        for line in m.group(1).split("\n"):
            line = line.strip().lstrip("*").strip()
            if line.startswith("launch "):
                for kv in re.split(r",\s*(?=(?:grid|block|smem)\s*=)", line[7:]):
                    k, _, v = kv.partition("=")
                    lines.append("%s %s" % (k.strip(), v.strip()))
            elif line.startswith("requires "):
                lines.append(line)
        if lines:
            parts.append("\n".join(lines))
    return parts


def expr_seeds():
    text = read("tests/test_expr.c")
    seeds = []
    for m in re.finditer(r'\b\w+\(\s*"((?:[^"\\]|\\.)*)"', text):
        s = m.group(1)
        if "%" in s or "column" in s or s.endswith(".h"):
            continue
        seeds.append(s)
    for a in annotations():
        for line in a.split("\n"):
            for m in re.finditer(r"=\s*([^,#]+)", line):
                seeds.append(m.group(1).strip().rstrip("*/").strip())
            for m in re.finditer(r"\[([^\]]+)\]", line):
                seeds.append(m.group(1))
    for v in variant_parts():
        for line in v.split("\n"):
            seeds.append(line.split(" ", 1)[1])
    return [s for s in seeds if s]


def spec_seeds():
    seeds = annotations()
    for rel in ("tests/test_spec.c", "tests/test_spec_text.c"):
        for s in c_strings(read(rel)):
            if re.search(r"(?m)^\s*(\*\s*|//\s*)?(size|in|out|inout|scalar) ", s) and "\n" in s:
                seeds.append(s)
    variants = variant_parts()
    extra = []
    for i, s in enumerate(seeds[:len(variants) * 2]):
        extra.append(s + "\n----\n" + variants[i % len(variants)] + "\n")
    return seeds + extra


def record(rtype, payload, reserved=0):
    return struct.pack("<IIQ", rtype, reserved, len(payload)) + payload + \
        struct.pack("<I", zlib.crc32(payload))


def blob(bid, data):
    return record(2, struct.pack("<Q", bid) + data)


def launch(obj):
    return record(1, json.dumps(obj, separators=(",", ":")).encode())


def end(n):
    return record(3, struct.pack("<Q", n))


MAGIC = b"KSCAP\0\1\0"


def ptr(index, offset, value, base, alloc, ptr_offset, before, after, **more):
    p = {"index": index, "offset": offset, "size": 8, "kind": "pointer",
         "value": struct.pack("<Q", value).hex(), "memory": "device", "base": hex(base),
         "alloc_size": alloc, "ptr_offset": ptr_offset, "before": before or None,
         "after": after or None}
    p.update(more)
    return p


def scalar(index, offset, raw):
    return {"index": index, "offset": offset, "size": len(raw), "kind": "scalar",
            "value": raw.hex()}


def capture_seeds():
    seeds = []
    # docs/capture-format.md's example: x and y in one allocation
    before, after = bytes(range(256)) * 2, bytes(255 - (i % 256) for i in range(512))
    base = 0x55cd593cec40
    l = {"kernel": "_Z4axpyPfS_fi", "launch": 0, "grid": [2, 1, 1], "block": [32, 1, 1],
         "smem": 0, "stream": "0x5000", "device": 0, "api": "cuLaunchKernel",
         "over_limit": False, "bytes_needed": 512, "bytes": 1024,
         "params": [ptr(0, 0, base, base, 512, 0, 1, 2), ptr(1, 8, base + 256, base, 512, 256, 1, 2),
                    scalar(2, 16, struct.pack("<i", 64)), scalar(3, 20, struct.pack("<f", 2.0))],
         "blobs": [{"id": 1, "size": 512, "crc32": zlib.crc32(before)},
                   {"id": 2, "size": 512, "crc32": zlib.crc32(after)}]}
    doc = MAGIC + blob(1, before) + blob(2, after) + launch(l) + end(1)
    seeds.append(b"\1" + doc)
    seeds.append(b"\0" + doc)
    seeds.append(b"\1" + MAGIC + blob(1, before) + blob(2, after) + launch(l))  # killed: no end
    # tests/test_capture.c's sample: a host pointer that was not captured
    b16 = struct.pack("<16f", *range(16))
    a16 = struct.pack("<16f", *[i if i < 8 else 3.0 * i for i in range(16)])
    s = {"kernel": "_Z4axpyPfS_fi", "launch": 0, "grid": [2, 1, 1], "block": [128, 1, 1],
         "smem": 64, "stream": "0x7ffe00001234", "device": 0, "api": "cuLaunchKernel",
         "over_limit": False, "bytes_needed": 64 + 4096, "bytes": 128,
         "params": [ptr(0, 0, 0x7ffe00001000, 0x7ffe00001000, 64, 0, 1, 2),
                    ptr(1, 8, 0x7ffe00001020, 0x7ffe00001000, 64, 32, 1, 2),
                    scalar(2, 16, struct.pack("<f", 3.0)), scalar(3, 20, struct.pack("<i", 8)),
                    {"index": 4, "offset": 24, "size": 8, "kind": "pointer",
                     "value": struct.pack("<Q", 0x800000000000).hex(), "memory": "host",
                     "base": "0x800000000000", "alloc_size": 4096, "ptr_offset": 0,
                     "before": None, "after": None,
                     "not_captured": "not accessible to cuMemcpyDtoH"}],
         "blobs": [{"id": 1, "size": 64, "crc32": zlib.crc32(b16)},
                   {"id": 2, "size": 64, "crc32": zlib.crc32(a16)}]}
    seeds.append(b"\1" + MAGIC + blob(1, b16) + blob(2, a16) + launch(s) + end(1))
    # a capture window: the blob holds a span of a pooled allocation
    span = bytes(64)
    w = dict(s, params=[ptr(0, 0, 0x7000 + 4096, 0x7000, 1 << 20, 4096, 1, 0, span=[4096, 4160]),
                        scalar(1, 8, struct.pack("<i", 16))],
             blobs=[{"id": 1, "size": 64, "crc32": zlib.crc32(span)}], bytes=64)
    seeds.append(b"\1" + MAGIC + blob(1, span) + launch(w) + end(1))
    # a failed launch, one over the limit, unknown arguments, a later
    # version's record type, integers as "0x" strings
    failed = dict(s, params=[ptr(0, 0, 0x9000, 0x9000, 64, 0, 1, 0)],
                  blobs=[{"id": 1, "size": 64, "crc32": zlib.crc32(b16)}],
                  error="CUDA_ERROR_ILLEGAL_ADDRESS", launch=1)
    over = dict(s, over_limit=True, bytes=0, bytes_needed="0x40000000000", launch="0x2",
                params=[{"index": 0, "offset": 0, "size": 8, "kind": "pointer",
                         "value": "00a0000000000000", "memory": "managed", "base": "0xa000",
                         "alloc_size": "0x40000000000", "ptr_offset": 0, "before": None,
                         "after": None, "not_captured": "over the limit"}], blobs=[])
    unknown = dict(s, api="cuLaunchKernelEx", device=-1, bytes=0,
                   params=[{"index": 0, "offset": 0, "size": 4, "kind": "unknown"},
                           {"index": 1, "offset": 8, "size": 16, "kind": "scalar",
                            "value": "00" * 16}], blobs=[])
    seeds.append(b"\1" + MAGIC + blob(1, b16) + launch(failed) + record(7, b"later") +
                 launch(over) + launch(unknown) + end(3))
    seeds.append(b"\1" + MAGIC)  # a program that captured nothing and was killed
    seeds.append(b"\1" + MAGIC + end(0))
    return seeds


def llm_seeds():
    seeds = [open(p, encoding="utf-8", errors="replace").read()
             for p in sorted(glob.glob(os.path.join(ROOT, "testdata/llm/replies/*.txt")))
             if not p.endswith("manifest.txt")]
    for s in c_strings(read("tests/test_llm_text.c")):
        if any(k in s for k in ("PLAN:", "INSIGHT:", "TECHNIQUE:", "```", "SEARCH", "__global__")):
            seeds.append(s)
    return seeds


def flags_seeds():
    seeds = []
    text = read("tests/test_flags.c")
    for m in re.finditer(r"\[\]\s*=\s*\{(.*?)\};", text, re.S):
        # each literal is one argument (c_strings would join adjacent ones)
        argv = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))
        seeds.append("\n".join(argv))
    for path in sorted(glob.glob(os.path.join(ROOT, "testdata/**/compile_commands.json"),
                                 recursive=True)):
        for entry in json.load(open(path)):
            argv = entry.get("arguments") or shlex.split(entry["command"])
            seeds.append("\n".join(argv))
    # response files: CMake's nvcc --options-file, gcc's @file, one that
    # includes itself, quotes and escapes
    rsp = '-I"/src/include dir" -isystem /opt/x/include -DNAME=\\"v\\" \'-DQ=a b\' --std=c++17'
    seeds.append("nvcc\n--options-file\nr\n-c\nk.cu\0" + rsp)
    seeds.append("nvcc\n-optf=r\n-c\nk.cu\0" + rsp + "\n-Iother\n")
    seeds.append("g++\n@r\n-c\na.cu\0-include pre.h -iquote q\n-D X=1\n")
    seeds.append("clang++\n@r\n\0@r -Iloop\n")
    seeds.append("nvcc\n-D\n\n-I\n\n--define-macro=\n-std\n")
    return seeds


def main():
    write("expr", expr_seeds())
    write("spec", spec_seeds())
    write("capture", capture_seeds())
    write("llm", llm_seeds())
    write("flags", flags_seeds())


if __name__ == "__main__":
    main()
