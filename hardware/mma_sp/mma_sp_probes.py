"""Pairwise one-hot probes of the warp-level mma.sp fragment layouts (A compressed, B, D).

For one form, warp w of the launch sets exactly one element of A (thread ta, register ra, slot sa)
and one element of B (thread tb, register rb, slot sb) to 1 (1.0 in the float types), C = 0, and
the metadata of every thread to one of two families: 0x44444444 (every 4-bit chunk keeps
positions 0,1) or 0xEEEEEEEE (keeps 2,3). The product is nonzero in at most one element of D,
exactly when the two one-hot elements meet in the same k; the kernel records which D element it
is (lane, register, half). So the records say, for every pair of A and B register positions,
whether they share k and where their product lands: layouts read off without any hypothesis.

Inputs are generated inside the kernel from the warp index (no host arrays):
  w = fam * NA * NB + ia * NB + ib,   ia = (ta * a_regs + ra) * per_a + sa,   same for ib.
Output per warp: code = 1 + lane * 8 + reg * 2 + half (0 when D is all zero), and the number of
threads holding a nonzero D element (must be 0 or 1).

    python hardware/mma_sp/mma_sp_probes.py BUILD_DIR            (here: PTX + manifest, checked with ptxas)
    # device: python3 .device/common/mma_sp_probes.py --device .device/common $OUT
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ONE = {"f16": 0x3C00, "bf16": 0x3F80, "tf32": 0x3F800000, "e4m3": 0x38, "e5m2": 0x3C,
       "u8": 1, "s8": 1, "u4": 1, "s4": 1}
FAMILIES = (0x44444444, 0xEEEEEEEE)

# (instruction body after the spvariant, atype, shape, dtype): one form per shape and element width
FORMS = [
    ("m16n8k16.row.col.f32.f16.f16.f32", "f16", "m16n8k16", "f32"),
    ("m16n8k16.row.col.f16.f16.f16.f16", "f16", "m16n8k16", "f16"),
    ("m16n8k32.row.col.f32.f16.f16.f32", "f16", "m16n8k32", "f32"),
    ("m16n8k16.row.col.f32.bf16.bf16.f32", "bf16", "m16n8k16", "f32"),
    ("m16n8k32.row.col.f32.bf16.bf16.f32", "bf16", "m16n8k32", "f32"),
    ("m16n8k8.row.col.f32.tf32.tf32.f32", "tf32", "m16n8k8", "f32"),
    ("m16n8k16.row.col.f32.tf32.tf32.f32", "tf32", "m16n8k16", "f32"),
    ("m16n8k64.row.col.f32.e4m3.e4m3.f32", "e4m3", "m16n8k64", "f32"),
    ("m16n8k32.row.col.s32.u8.u8.s32", "u8", "m16n8k32", "s32"),
    ("m16n8k64.row.col.s32.u8.u8.s32", "u8", "m16n8k64", "s32"),
    ("m16n8k64.row.col.s32.u4.u4.s32", "u4", "m16n8k64", "s32"),
    ("m16n8k128.row.col.s32.u4.u4.s32", "u4", "m16n8k128", "s32"),
]
BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "u8": 8, "s8": 8, "u4": 4, "s4": 4}


def geometry(atype: str, shape: str, dtype: str) -> dict:
    k = int(shape.split("k")[1])
    bits = BITS[atype]
    a_regs = 16 * (k // 2) * bits // 1024
    b_regs = k * 8 * bits // 1024
    per = 32 // bits
    return dict(a_regs=a_regs, b_regs=b_regs, per=per, bits=bits, na=32 * a_regs * per,
                nb=32 * b_regs * per, c_regs=2 if dtype == "f16" else 4, d_regs=2 if dtype == "f16" else 4)


def kernel(name: str, body: str, atype: str, g: dict) -> str:
    na, nb, per, bits = g["na"], g["nb"], g["per"], g["bits"]
    ar, br = g["a_regs"], g["b_regs"]
    regs = lambda p, n: "{" + ", ".join(f"%{p}{i}" for i in range(n)) + "}"
    mma = (f"mma.sp::ordered_metadata.sync.aligned.{body} {regs('d', g['d_regs'])}, {regs('a', ar)}, "
           f"{regs('b', br)}, {regs('c', g['c_regs'])}, %e, 0;")
    L = [f".visible .entry {name}(.param .u64 pout, .param .u32 nwarps)", "{",
         "  .reg .b32 %a<4>, %b<4>, %c<4>, %d<4>, %e;",
         "  .reg .b32 %w, %lane, %fam, %rem, %ia, %ib, %ta, %ra, %sa, %tb, %rb, %sb, %va, %vb, %code, %t<12>;",
         "  .reg .pred %p<8>;", "  .reg .b64 %q<4>;",
         "  mov.u32 %t0, %ctaid.x;", "  mov.u32 %t1, %ntid.x;", "  mov.u32 %t2, %tid.x;",
         "  mad.lo.u32 %t3, %t0, %t1, %t2;", "  shr.u32 %w, %t3, 5;", "  and.b32 %lane, %t3, 31;",
         f"  div.u32 %fam, %w, {na * nb};", f"  rem.u32 %rem, %w, {na * nb};",
         f"  div.u32 %ia, %rem, {nb};", f"  rem.u32 %ib, %rem, {nb};"]
    for side, idx, nreg, t, r, s, v in (("a", "%ia", ar, "%ta", "%ra", "%sa", "%va"),
                                        ("b", "%ib", br, "%tb", "%rb", "%sb", "%vb")):
        L += [f"  div.u32 {t}, {idx}, {nreg * per};", f"  div.u32 %t4, {idx}, {per};",
              f"  rem.u32 {r}, %t4, {nreg};", f"  rem.u32 {s}, {idx}, {per};",
              f"  mul.lo.u32 %t5, {s}, {bits};", f"  mov.b32 %t6, {ONE[atype]};",
              f"  shl.b32 {v}, %t6, %t5;", f"  setp.eq.u32 %p0, %lane, {t};"]
        for i in range(nreg):
            L += [f"  setp.eq.and.u32 %p1, {r}, {i}, %p0;", f"  selp.b32 %{side}{i}, {v}, 0, %p1;"]
    L += ["  setp.eq.u32 %p2, %fam, 0;",
          f"  selp.b32 %e, {FAMILIES[0]:#x}, {FAMILIES[1]:#x}, %p2;"]
    L += [f"  mov.b32 %c{i}, 0;" for i in range(g["c_regs"])]
    L += ["  " + mma, "  mov.b32 %code, 0;", "  shl.b32 %t7, %lane, 3;"]
    for j in range(g["d_regs"]):
        L += [f"  and.b32 %t8, %d{j}, 65535;", "  setp.eq.u32 %p4, %t8, 0;",
              "  selp.b32 %t9, 1, 0, %p4;",                      # half 1 if the low half is zero
              f"  add.u32 %t10, %t7, {j * 2 + 1};", "  add.u32 %t10, %t10, %t9;",
              f"  setp.ne.u32 %p3, %d{j}, 0;", "  selp.b32 %code, %t10, %code, %p3;"]
    L += ["  ld.param.u64 %q0, [pout];", "  cvta.to.global.u64 %q0, %q0;", "  ld.param.u32 %t11, [nwarps];",
          "  mul.wide.u32 %q1, %w, 4;", "  add.u64 %q2, %q0, %q1;", "  mul.wide.u32 %q3, %t11, 4;",
          "  setp.ne.u32 %p5, %code, 0;",
          "  @%p5 red.global.max.u32 [%q2], %code;", "  add.u64 %q2, %q2, %q3;",
          "  @%p5 red.global.add.u32 [%q2], 1;", "  ret;", "}", ""]
    return "\n".join(L)


def build(outdir: Path) -> None:
    items, kernels = [], []
    for i, (body, atype, shape, dtype) in enumerate(FORMS):
        g = geometry(atype, shape, dtype)
        name = f"probe{i}"
        kernels.append(kernel(name, body, atype, g))
        items.append(dict(name=name, instruction=f"mma.sp::ordered_metadata.sync.aligned.{body}",
                          atype=atype, shape=shape, dtype=dtype, warps=2 * g["na"] * g["nb"], **g))
    ptx = ".version 9.0\n.target sm_90a\n.address_size 64\n\n" + "\n".join(kernels)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "probes.ptx").write_text(ptx)
    subprocess.run(["ptxas", "-arch=sm_90a", str(outdir / "probes.ptx"), "-o", str(outdir / "probes.cubin")],
                   check=True)
    (outdir / "probes.json").write_text(json.dumps(dict(items=items, families=FAMILIES)))
    print(f"{len(items)} probe kernels, {sum(it['warps'] for it in items)} warps")


def device(build: Path, out: Path) -> None:
    import cupy as cp
    import numpy as np
    man = json.loads((build / "probes.json").read_text())
    mod = cp.RawModule(path=str(build / "probes.cubin"))
    res = {}
    log = open(out / "probes_log.txt", "w", buffering=1)
    for it in man["items"]:
        t = time.time()
        W = it["warps"]
        o = cp.zeros(2 * W, dtype=cp.uint32)
        mod.get_function(it["name"])((W * 32 // 128,), (128,), (o, np.uint32(W)))
        cp.cuda.runtime.deviceSynchronize()
        o = cp.asnumpy(o)
        code, count = o[:W], o[W:]
        w = np.nonzero(code)[0].astype(np.uint32)
        res[it["name"]] = np.stack([w, code[w], count[w]])
        log.write(f"{it['name']} {it['instruction']}: {W} warps, {len(w)} nonzero, "
                  f"max count {int(count.max())}, {time.time()-t:.2f}s\n")
    np.savez_compressed(out / "mma_sp_probes.npz", **res)


if __name__ == "__main__":
    if sys.argv[1] == "--device":
        device(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        build(Path(sys.argv[1]))
