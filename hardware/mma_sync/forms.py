"""Dense warp-level `mma.sync` forms captured on the H200 (sm_90a) to check the numerics engine's
unverified assumptions (docs/numerics.md), plus two sparse fp8 forms as a re-capture control.

A form is a dict in the format of hardware/mma_sp/mma_sp_forms.py (so ptxsim.testing.mma_sp_inputs generates
its random/special registers; the metadata register it also generates is not an input of the
dense forms).  Register counts follow the dense fragments of PTX ISA 9.7.14.5: A M*K, B K*N, C/D
M*N elements over 32 threads (m8n8k4: the four quad-pairs each compute a copy; 2 A, 2 B regs).
"""
from __future__ import annotations

import itertools

BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8}


def _form(shape, dtype, atype, btype, ctype, sparse=False):
    m, n, k = (int(x) for x in shape[1:].replace("n", " ").replace("k", " ").split())
    ab, bb = BITS[atype], BITS[btype]
    if shape == "m8n8k4":
        a_regs = b_regs = 2
        c_regs = 4 if ctype == "f16" else 8
        d_regs = 4 if dtype == "f16" else 8
    else:
        a_regs = m * (k // 2 if sparse else k) * ab // 1024
        b_regs = k * n * bb // 1024
        c_regs = 2 if ctype == "f16" else 4
        d_regs = 2 if dtype == "f16" else 4
    regs = lambda p, c: "{" + ", ".join(f"%{p}{i}" for i in range(c)) + "}"
    ops = f"{regs('d', d_regs)}, {regs('a', a_regs)}, {regs('b', b_regs)}, {regs('c', c_regs)}"
    inputs = [f"%a{i}" for i in range(a_regs)] + [f"%b{i}" for i in range(b_regs)] + \
             [f"%c{i}" for i in range(c_regs)]
    if sparse:
        ops += ", %e, 0"
        inputs.append("%e")
    text = (f"mma{'.sp' if sparse else ''}.sync.aligned.{shape}.row.col.{dtype}.{atype}.{btype}"
            f".{ctype} {ops};")
    return dict(instruction=text, shape=shape, dtype=dtype, atype=atype, btype=btype, ctype=ctype,
                sparse=sparse, spvariant=".sp" if sparse else "", selector=0,
                a_regs=a_regs, b_regs=b_regs, c_regs=c_regs, d_regs=d_regs, a_bits=ab, b_bits=bb,
                meta="2:4", inputs=inputs, outputs=[f"%d{i}" for i in range(d_regs)],
                block_scale=False)


def forms() -> list[dict]:
    out = []
    for dt, ct in (("f32", "f32"), ("f16", "f16")):
        for shape in ("m16n8k16", "m16n8k8"):
            out.append(_form(shape, dt, "f16", "f16", ct))
    for shape in ("m16n8k16", "m16n8k8"):
        out.append(_form(shape, "f32", "bf16", "bf16", "f32"))
    for shape in ("m16n8k8", "m16n8k4"):
        out.append(_form(shape, "f32", "tf32", "tf32", "f32"))
    for at, bt in itertools.product(("e4m3", "e5m2"), repeat=2):
        for dt in ("f32", "f16"):
            out.append(_form("m16n8k32", dt, at, bt, dt))
    for dt in ("f32", "f16"):
        out.append(_form("m16n8k16", dt, "e4m3", "e4m3", dt))
    # mixed C/D types exist only for m8n8k4 (ptxas 13.0 rejects them for m16n8k8/k16)
    for dt, ct in itertools.product(("f32", "f16"), repeat=2):
        out.append(_form("m8n8k4", dt, "f16", "f16", ct))
    # control: sparse fp8 forms already captured in tests/data/hardware/mma_sp/mma_sp_sm90.npz
    out.append(_form("m16n8k64", "f32", "e4m3", "e4m3", "f32", sparse=True))
    out.append(_form("m16n8k64", "f32", "e5m2", "e4m3", "f32", sparse=True))
    for i, f in enumerate(out):
        f["name"] = f"s{i}"
    return out


def decls(form: dict) -> str:
    return "  .reg .b32 %a<4>, %b<4>, %c<8>, %d<8>, %e;"
