"""Enumerate every warp-level mma.sp / mma.sp::ordered_metadata form of the spec
(mma-sp-warp-level.md, 9.7.14.6.3) with every sparsity selector 0..3 and .satfinite choice.

Register counts follow from the shape: A (compressed, M*K/2 elements), B (K*N) and C/D (M*N)
spread over 32 threads, 32-bit registers; 8-bit containers for f8f6f4 kinds. ptxas then decides
what is legal for a target (build.py records the rejections).
"""
from __future__ import annotations

import itertools

BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "e3m2": 8, "e2m3": 8, "e2m1": 8,
        "u8": 8, "s8": 8, "u4": 4, "s4": 4}
SPV = (".sp", ".sp::ordered_metadata")


def _form(spv, shape, body, dtype, atype, btype, ctype, sel, kind="", scale=None, abits=None):
    m, n, k = 16, 8, int(shape.split("k")[1])
    ab = abits or BITS[atype]
    bb = abits or BITS[btype]
    a_regs = m * (k // 2) * ab // 1024
    b_regs = k * n * bb // 1024
    c_regs = 2 if ctype == "f16" else 4
    d_regs = 2 if dtype == "f16" else 4
    regs = lambda p, c: "{" + ", ".join(f"%{p}{i}" for i in range(c)) + "}"
    ops = f"{regs('d', d_regs)}, {regs('a', a_regs)}, {regs('b', b_regs)}, {regs('c', c_regs)}, %e, {sel}"
    inputs = [f"%a{i}" for i in range(a_regs)] + [f"%b{i}" for i in range(b_regs)] + \
             [f"%c{i}" for i in range(c_regs)] + ["%e"]
    if scale:
        ops += ", %sa, {%bida, %tida}, %sb, {%bidb, %tidb}"
        inputs += ["%sa", "%sb"]
    text = f"mma{spv}.sync.aligned.{shape}.row.col{kind}{body} {ops};"
    return dict(instruction=text, spvariant=spv, shape=shape, dtype=dtype, atype=atype,
                btype=btype, ctype=ctype, selector=sel, a_regs=a_regs, b_regs=b_regs,
                c_regs=c_regs, d_regs=d_regs, a_bits=ab, b_bits=bb,
                meta="1:2" if atype == "tf32" else "2:4", inputs=inputs,
                outputs=[f"%d{i}" for i in range(d_regs)], block_scale=bool(scale))


def forms() -> list[dict]:
    out = []
    sels = range(4)
    for spv, sel in itertools.product(SPV, sels):
        # half precision; dtype x ctype all four (spec: must match for these shapes)
        for shape in ("m16n8k16", "m16n8k32"):
            for dt, ct in itertools.product(("f16", "f32"), repeat=2):
                out.append(_form(spv, shape, f".{dt}.f16.f16.{ct}", dt, "f16", "f16", ct, sel))
        for shape in ("m16n8k16", "m16n8k32"):
            out.append(_form(spv, shape, ".f32.bf16.bf16.f32", "f32", "bf16", "bf16", "f32", sel))
        for shape in ("m16n8k8", "m16n8k16"):
            out.append(_form(spv, shape, ".f32.tf32.tf32.f32", "f32", "tf32", "tf32", "f32", sel))
        for at, bt in itertools.product(("e4m3", "e5m2"), repeat=2):
            out.append(_form(spv, "m16n8k64", f".f32.{at}.{bt}.f32", "f32", at, bt, "f32", sel))
            for dt in ("f16", "f32"):   # m16n8k32 (sm_120)
                out.append(_form(spv, "m16n8k32", f".{dt}.{at}.{bt}.{dt}", dt, at, bt, dt, sel))
        for at, bt in itertools.product(("u8", "s8"), repeat=2):
            for shape, sat in itertools.product(("m16n8k32", "m16n8k64"), ("", ".satfinite")):
                out.append(_form(spv, shape, f"{sat}.s32.{at}.{bt}.s32", "s32", at, bt, "s32", sel))
        for at, bt in itertools.product(("u4", "s4"), repeat=2):
            for shape, sat in itertools.product(("m16n8k64", "m16n8k128"), ("", ".satfinite")):
                out.append(_form(spv, shape, f"{sat}.s32.{at}.{bt}.s32", "s32", at, bt, "s32", sel))
    # sm_120a-only kinds (ordered metadata only); selector 0 (recorded for the rejection list)
    spv = ".sp::ordered_metadata"
    f8 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
    for at, bt in itertools.product(f8, repeat=2):
        for dt in ("f16", "f32"):
            out.append(_form(spv, "m16n8k64", f".{dt}.{at}.{bt}.{dt}", dt, at, bt, dt, 0,
                             kind=".kind::f8f6f4"))
        out.append(_form(spv, "m16n8k64", f".f32.{at}.{bt}.f32.ue8m0", "f32", at, bt, "f32", 0,
                         kind=".kind::mxf8f6f4.block_scale.scale_vec::1X", scale=True))
    out.append(_form(spv, "m16n8k128", ".f32.e2m1.e2m1.f32.ue8m0", "f32", "e2m1", "e2m1", "f32", 0,
                     kind=".kind::mxf4.block_scale.scale_vec::2X", scale=True, abits=4))
    for sv, st in (("2X", "ue8m0"), ("4X", "ue8m0"), ("4X", "ue4m3")):
        out.append(_form(spv, "m16n8k128", f".f32.e2m1.e2m1.f32.{st}", "f32", "e2m1", "e2m1", "f32", 0,
                         kind=f".kind::mxf4nvf4.block_scale.scale_vec::{sv}", scale=True, abits=4))
    for i, f in enumerate(out):
        f["name"] = f"m{i}"
    return out


def decls(form: dict) -> str:
    d = ["  .reg .b32 %a<4>, %b<4>, %c<4>, %d<4>, %e, %sa, %sb;"]
    if form["block_scale"]:
        d.append("  .reg .b16 %bida, %tida, %bidb, %tidb;")
    return "\n".join(d)


if __name__ == "__main__":
    fs = forms()
    print(len(fs))
    print(fs[0]["instruction"])
