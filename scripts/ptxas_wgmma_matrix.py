"""Record ptxas's verdict on wgmma.mma_async and ldmatrix / stmatrix / movmatrix spellings (wider
than the syntax) on several targets, and the lowest PTX ISA version of each legal one on sm_90a:
the oracle of isa.wgmma's and isa.matrix's tables (tests/isa/test_matrix_legality.py).

    python scripts/ptxas_wgmma_matrix.py [OUT.json]
"""
from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ptxas_mma_sync import PTXAS, VERSIONS, run  # noqa: E402

TARGETS = ("sm_75", "sm_80", "sm_90", "sm_90a", "sm_100a", "sm_120a")
KW = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "s8": 32, "u8": 32, "b1": 256}


def vec(p, n):
    return "{" + ", ".join(f"%r{p + i}" for i in range(n)) + "}"


def wgmma_candidates():
    out = []
    for (a, b), d, n, sparse, a_regs in itertools.product(
            [("f16", "f16"), ("bf16", "bf16"), ("tf32", "tf32"), ("e4m3", "e5m2"), ("e5m2", "e5m2"),
             ("s8", "u8"), ("u8", "u8"), ("b1", "b1"), ("f16", "bf16"), ("tf32", "f16")],
            ("f16", "f32", "s32"), (8, 24, 40, 256, 264),
            (False, True), (False, True)):
        k = KW[a] * (2 if sparse else 1)
        dregs = n // 4 if d == "f16" else n // 2
        ops = [vec(0, dregs), vec(140, 4) if a_regs else "%rd1", "%rd2"]
        if sparse:
            ops += ["%r150", "0"]
        ops.append("%p1")
        if a in ("f16", "bf16", "tf32", "e4m3", "e5m2"):
            ops += ["1", "-1"]
        if a in ("f16", "bf16"):
            ops += (["1"] if a_regs else ["0", "1"])
        tail = ".and.popc" if a == "b1" else ""
        for sat in (("", ".satfinite") if a in ("s8", "u8") and n in (8, 64) and not sparse else ("",)):
            out.append(f"wgmma.mma_async{'.sp' if sparse else ''}.sync.aligned.m64n{n}k{k}{sat}"
                       f".{d}.{a}.{b}{tail} {', '.join(ops)};")
    out.append("wgmma.mma_async.sync.aligned.m64n8k256.s32.b1.b1.xor.popc {%r0, %r1, %r2, %r3}, %rd1, %rd2, %p1;")
    out.append("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%r0, %r1, %r2, %r3}, %rd1, %rd2, %p1, 1, 1, 0;")
    return out


def matrix_candidates():
    out = []
    for op, shape, num, trans, ss, t in itertools.product(
            ("ldmatrix", "stmatrix"), ("m8n8", "m16n16", "m8n16", "m16n8"), (1, 2, 4),
            (False, True), ("", ".shared", ".shared::cta", ".global"),
            ("b16", "b8", "b8x16.b6x16_p32", "b8x16.b4x16_p64")):
        if ss not in ("", ".shared") and (shape, num, t) != ("m8n8", 4, "b16"):
            continue
        n = num * (2 if shape == "m16n16" else 1)
        q = f"{op}.sync.aligned.{shape}.x{num}{'.trans' if trans else ''}{ss}.{t}"
        out.append(f"{q} {vec(0, n)}, [%rd1];" if op == "ldmatrix" else f"{q} [%rd1], {vec(0, n)};")
    for t, tr in itertools.product(("b16", "b8"), ("", ".trans")):
        out.append(f"movmatrix.sync.aligned.m8n8{tr}.{t} %r0, %r1;")
    out.append("ldmatrix.sync.aligned.m8n8.x4.b16 {%r0, %r1}, [%rd1];")
    return out


def shorten(text: str) -> str:
    """'{%r0, %r1, ..., %r127}' -> '{%r0..%r127}' (tests/isa/test_matrix_legality.py expands)."""
    import re

    def one(m):
        regs = [int(x) for x in re.findall(r"%r(\d+)", m.group(0))]
        if len(regs) > 2 and regs == list(range(regs[0], regs[0] + len(regs))):
            return f"{{%r{regs[0]}..%r{regs[-1]}}}"
        return m.group(0)
    return re.sub(r"\{[^}]*\}", one, text)


def main(out: Path):
    texts = wgmma_candidates() + matrix_candidates()
    res = {t: run(t, texts, version="9.2") for t in TARGETS}
    for t in TARGETS:                      # the accepted ones once more, alone
        ok = [i for i in range(len(texts)) if i not in res[t]]
        again = run(t, [texts[i] for i in ok], version="9.2")
        for j, msgs in again.items():
            res[t][ok[j]] = msgs
    since = {}
    for v in VERSIONS:
        if tuple(map(int, v.split("."))) < (8, 0):          # sm_90a needs PTX ISA 8.0
            continue
        acc = [i for i in range(len(texts)) if i not in res["sm_90a"]]
        errs = run("sm_90a", [texts[i] for i in acc], version=v)
        for j, i in enumerate(acc):
            if j not in errs and i not in since:
                since[i] = v
    messages, cases = [], []
    for i, t in enumerate(texts):
        mask = sum(1 << j for j, tg in enumerate(TARGETS) if i not in res[tg])
        msg = next((res[tg][i][0] for tg in reversed(TARGETS) if i in res[tg]), None)
        if msg is not None and msg not in messages:
            messages.append(msg)
        cases.append([shorten(t), mask, messages.index(msg) if msg is not None else -1,
                      since.get(i)])
    ver = __import__("subprocess").run([PTXAS, "--version"], capture_output=True,
                                       text=True).stdout.split("\n")[-2]
    out.write_text(json.dumps(dict(ptxas=ver, version="9.2", targets=TARGETS, messages=messages,
                                   cases=cases), separators=(",", ":"))
                   .replace('],["', '],\n["'))
    print(f"{len(cases)} cases x {len(TARGETS)} targets, "
          f"{sum(bin(c[1]).count('1') for c in cases)} accepted")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/ptx/wgmma_matrix_ptxas.json"))
