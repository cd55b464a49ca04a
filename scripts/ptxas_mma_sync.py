"""Record ptxas's verdict on every dense warp-level `mma` form the grammar can spell, on many
targets: the oracle of isa/mma_sync.py's legality table (tests/isa/test_mma_sync_legality.py).

    python scripts/ptxas_mma_sync.py [OUT.json] [--ptxas PATH]

Candidates are deliberately wider than the PTX ISA 9.7.14.5.14 syntax (every shape with every
type family, every layout pair, .satfinite, bit operations, kinds, scale types and vectors), so
that the table's refusals are checked too. One module per target holds every candidate, one
kernel each; ptxas reports errors with line numbers, so a kernel's verdict is "no error on its
lines". Operand vectors have the register counts of the fragment layouts (isa.mma_sync), or the
M*K*bits/1024 count for shapes the table does not know.
"""
from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PTXAS = "/work/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas"
TARGETS = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_88", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a",
           "sm_100f", "sm_103", "sm_103a", "sm_103f", "sm_110", "sm_110a", "sm_110f", "sm_120",
           "sm_120a", "sm_120f", "sm_121", "sm_121a", "sm_121f")
VERSION = "9.2"
F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "s32": 32, "u8": 8, "s8": 8,
        "u4": 4, "s4": 4, "b1": 1, "e4m3": 8, "e5m2": 8, "e3m2": 8, "e2m3": 8, "e2m1": 8}
LAYOUTS = [(a, b) for a in ("row", "col") for b in ("row", "col")]


def shape(m, n, k):
    return f"m{m}n{n}k{k}"


def candidates():
    out = []

    def add(m, n, k, d, a, b, c, lay=("row", "col"), extra="", kind=None, tail=""):
        out.append(dict(m=m, n=n, k=k, d=d, a=a, b=b, c=c, alayout=lay[0], blayout=lay[1],
                        extra=extra, kind=kind, tail=tail))

    # half precision: every layout pair for every shape
    for (m, n, k), lay in itertools.product([(8, 8, 4), (16, 8, 8), (16, 8, 16), (16, 8, 4),
                                             (16, 8, 32)], LAYOUTS):
        for d, c in itertools.product(("f16", "f32"), repeat=2):
            add(m, n, k, d, "f16", "f16", c, lay)
    # bf16 / tf32 (and their mixes)
    for (m, n, k), lay in itertools.product([(16, 8, 4), (16, 8, 8), (16, 8, 16), (8, 8, 4)],
                                            [("row", "col"), ("col", "row")]):
        for a, b in (("bf16", "bf16"), ("tf32", "tf32"), ("bf16", "tf32")):
            for d, c in (("f32", "f32"), ("f16", "f16"), ("f32", "f16")):
                add(m, n, k, d, a, b, c, lay)
    # f64
    for (m, n, k), lay in itertools.product([(8, 8, 4), (16, 8, 4), (16, 8, 8), (16, 8, 16),
                                             (16, 8, 32), (8, 8, 8)], [("row", "col"), ("col", "row"), ("row", "row")]):
        add(m, n, k, "f64", "f64", "f64", "f64", lay)
    add(8, 8, 4, "f64", "f64", "f64", "f32")
    # integers
    for (m, n, k) in [(8, 8, 16), (16, 8, 16), (16, 8, 32), (16, 8, 64), (8, 8, 32)]:
        for a, b in itertools.product(("u8", "s8"), repeat=2):
            for sat in ("", ".satfinite"):
                add(m, n, k, "s32", a, b, "s32", extra=sat)
    for lay in [("col", "row"), ("row", "row")]:
        add(16, 8, 32, "s32", "s8", "s8", "s32", lay)
        add(8, 8, 16, "s32", "s8", "s8", "s32", lay)
    for (m, n, k) in [(8, 8, 32), (16, 8, 32), (16, 8, 64), (16, 8, 128), (8, 8, 16)]:
        for a, b in itertools.product(("u4", "s4"), repeat=2):
            for sat in ("", ".satfinite"):
                add(m, n, k, "s32", a, b, "s32", extra=sat)
    add(16, 8, 32, "s32", "s8", "u4", "s32")
    # single bit
    for (m, n, k) in [(8, 8, 128), (16, 8, 128), (16, 8, 256), (16, 8, 64), (8, 8, 256)]:
        for tail in (".xor.popc", ".and.popc", ".popc", ".xor", ""):
            add(m, n, k, "s32", "b1", "b1", "s32", tail=tail)
        add(m, n, k, "s32", "b1", "b1", "s32", extra=".satfinite", tail=".xor.popc")
    # fp8 without a kind
    for k in (8, 16, 32, 64):
        for a, b in itertools.product(("e4m3", "e5m2"), repeat=2):
            for d, c in itertools.product(("f16", "f32"), repeat=2):
                add(16, 8, k, d, a, b, c)
    add(16, 8, 32, "f32", "e4m3", "e4m3", "f32", ("col", "row"))
    add(16, 8, 32, "f32", "e3m2", "e3m2", "f32")
    # kind::f8f6f4
    for k in (16, 32, 64):
        for a, b in itertools.product(F8F6F4, repeat=2):
            for d, c in itertools.product(("f16", "f32"), repeat=2):
                if k == 64 and (d != c or (a, b) not in (("e4m3", "e4m3"), ("e2m1", "e2m1"))):
                    continue
                add(16, 8, k, d, a, b, c, kind="f8f6f4")
    add(16, 8, 32, "f32", "e4m3", "e4m3", "f32", kind="f8f6f4", extra=".satfinite")
    # block scaled
    for kind, k, types in (("mxf8f6f4", 32, F8F6F4), ("mxf4", 64, ("e2m1",)),
                           ("mxf4nvf4", 64, ("e2m1",)), ("mxf8f6f4", 64, ("e2m1",)),
                           ("mxf4", 32, ("e2m1",))):
        for a, b in itertools.product(types, repeat=2):
            for st in ("ue8m0", "ue4m3"):
                for vec in ("", ".scale_vec::1X", ".scale_vec::2X", ".scale_vec::4X"):
                    if kind == "mxf8f6f4" and k == 32 and (a, b) != ("e4m3", "e4m3") and \
                            (st, vec) not in (("ue8m0", ""), ("ue8m0", ".scale_vec::1X")):
                        continue
                    add(16, 8, k, "f32", a, b, "f32", kind=kind, extra=".block_scale" + vec,
                        tail="." + st)
            add(16, 8, k, "f16", a, b, "f16", kind=kind, extra=".block_scale",
                tail=".ue8m0")
    for a, b in itertools.product(F8F6F4, repeat=2):       # kinds without .block_scale
        add(16, 8, 32, "f32", a, b, "f32", kind="mxf8f6f4")
    add(16, 8, 64, "f32", "e2m1", "e2m1", "f32", kind="mxf4")
    add(16, 8, 64, "f32", "e2m1", "e2m1", "f32", kind="mxf4nvf4")
    return out


def regs_of(f):
    """Register counts (A, B, C, D) and the register class of each operand."""
    m, n, k = f["m"], f["n"], f["k"]
    if f["kind"] in ("mxf4", "mxf4nvf4"):
        ab = 4
    else:
        ab = BITS[f["a"]]
    if (m, n, k) == (8, 8, 4) and f["a"] == "f16":
        a = b = 2
    elif f["a"] == "f64":
        a, b = m * k // 32, k * n // 32
    else:
        a, b = max(1, m * k * ab // 1024), max(1, k * n * BITS[f["b"]] // 1024) if not f["kind"] in ("mxf4", "mxf4nvf4") else max(1, k * n * 4 // 1024)
    def cd(t):
        if (m, n, k) == (8, 8, 4) and f["a"] == "f16":
            return 4 if t == "f16" else 8
        if t == "f64":
            return m * n // 32
        return max(1, m * n * BITS[t] // 1024)
    return a, b, cd(f["c"]), cd(f["d"])


def text(f, names=None):
    a, b, c, d = regs_of(f)
    wide = f["a"] == "f64"
    def vec(prefix, n, start, w64=False):
        r = "%rd" if w64 else "%r"
        return "{" + ", ".join(f"{r}{start + i}" for i in range(n)) + "}"
    ops = [vec("d", d, 0, f["d"] == "f64"), vec("a", a, 40, wide), vec("b", b, 80, wide),
           vec("c", c, 120, f["c"] == "f64")]
    if ".block_scale" in f["extra"]:
        ops += ["%r200", "{%rs1, %rs2}", "%r201", "{%rs3, %rs4}"]
    kind = f".kind::{f['kind']}" if f["kind"] else ""
    q = (f"mma.sync.aligned.{shape(f['m'], f['n'], f['k'])}.{f['alayout']}.{f['blayout']}{kind}"
         f"{f['extra']}.{f['d']}.{f['a']}.{f['b']}.{f['c']}{f['tail']}")
    return q + " " + ", ".join(ops) + ";"


HEAD = ".version {v}\n.target {t}\n.address_size 64\n"
BODY = (".visible .entry k{i}()\n{{\n.reg .b32 %r<220>;\n.reg .b64 %rd<200>;\n.reg .b16 %rs<8>;\n"
        ".reg .pred %p<4>;\n"
        "{inst}\nret;\n}}\n")
_ERR = re.compile(r"line (\d+); error\s*:\s*(.*)")


def run(target, texts, ptxas=PTXAS, version=VERSION):
    """{index: [error messages]} for the kernels ptxas rejects on `target`."""
    src = [HEAD.format(v=version, t=target)]
    line = src[0].count("\n") + 1
    spans = []
    for i, t in enumerate(texts):
        body = BODY.format(i=i, inst=t)
        spans.append((line, line + body.count("\n")))
        src.append(body)
        line += body.count("\n")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.ptx"
        p.write_text("".join(src))
        r = subprocess.run([ptxas, f"-arch={target}", str(p), "-o", str(Path(d) / "m.cubin")],
                           capture_output=True, text=True)
    errs = {}
    for m in _ERR.finditer(r.stderr):
        ln = int(m.group(1))
        i = next(j for j, (a, b) in enumerate(spans) if a <= ln < b)
        errs.setdefault(i, []).append(m.group(2).strip())
    if r.returncode != 0 and not errs:
        raise RuntimeError(f"ptxas failed on {target} with no line errors:\n{r.stderr[-2000:]}")
    return errs


# PTX ISA versions ptxas 13.5 knows from 6.3 on, and the targets whose accepted forms are probed
# at every version: the lowest version a form assembles at is its PTX ISA note.
VERSIONS = ("6.3", "6.4", "6.5", "7.0", "7.1", "7.2", "7.3", "7.4", "7.5", "7.6", "7.7", "7.8",
            "8.0", "8.1", "8.2", "8.3", "8.4", "8.5", "8.6", "8.7", "8.8", "9.0", "9.1", "9.2")
PROBE = {"sm_75": "6.3", "sm_80": "7.0", "sm_89": "7.8", "sm_90": "7.8", "sm_100a": "8.6",
         "sm_120a": "8.7", "sm_120f": "8.8"}


def since(texts, accepted, ptxas):
    """{target: {index: lowest version}} for the accepted forms of the PROBE targets."""
    out = {}
    def one(job):
        t, v = job
        idx = accepted[t]
        errs = run(t, [texts[i] for i in idx], ptxas, version=v)
        return t, v, {idx[j] for j in range(len(idx)) if j not in errs}
    jobs = [(t, v) for t, lo in PROBE.items() for v in VERSIONS
            if tuple(map(int, v.split("."))) >= tuple(map(int, lo.split(".")))]
    with ThreadPoolExecutor(4) as ex:
        for t, v, ok in ex.map(one, jobs):
            for i in ok:
                cur = out.setdefault(t, {}).get(i)
                if cur is None or tuple(map(int, v.split("."))) < tuple(map(int, cur.split("."))):
                    out[t][i] = v
    return out


def main(out: Path, ptxas: str = PTXAS):
    cands = candidates()
    texts = [text(f) for f in cands]
    ver = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout.split("\n")[-2]
    with ThreadPoolExecutor(4) as ex:
        res = dict(zip(TARGETS, ex.map(lambda t: run(t, texts, ptxas), TARGETS)))
    # a kernel's errors can stop ptxas before later kernels are checked: re-run the accepted
    # ones alone on each target (they must assemble without the rejected ones)
    for t in TARGETS:
        ok = [i for i in range(len(texts)) if i not in res[t]]
        again = run(t, [texts[i] for i in ok], ptxas)
        for j, msgs in again.items():
            res[t][ok[j]] = msgs
    accepted = {t: [i for i in range(len(texts)) if i not in res[t]] for t in PROBE}
    first = since(texts, accepted, ptxas)
    # compact: [instruction, accepted targets (bit i = TARGETS[i]), index of one rejection
    # message (the newest target's) or -1, {probe target: lowest PTX ISA version}]
    messages, cases = [], []
    for i, t in enumerate(texts):
        mask = sum(1 << j for j, tg in enumerate(TARGETS) if i not in res[tg])
        msg = next((res[tg][i][0] for tg in reversed(TARGETS) if i in res[tg]), None)
        if msg is not None and msg not in messages:
            messages.append(msg)
        cases.append([t, mask, messages.index(msg) if msg is not None else -1,
                      {tg: first[tg][i] for tg in PROBE if i in first.get(tg, {})}])
    out.write_text(json.dumps(dict(ptxas=ver, version=VERSION, targets=TARGETS, probe=PROBE,
                                   messages=messages, cases=cases), separators=(",", ":"))
                   .replace('],["mma', '],\n["mma'))
    n_ok = sum(bin(c[1]).count("1") for c in cases)
    print(f"{len(cases)} forms x {len(TARGETS)} targets; {n_ok} accepted; ptxas {ver}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    p = sys.argv[sys.argv.index("--ptxas") + 1] if "--ptxas" in sys.argv else PTXAS
    main(Path(args[0] if args else "tests/data/ptx/mma_sync_ptxas.json"), p)
