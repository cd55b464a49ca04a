"""Settle `vop d, a, b, c` with neither .op2 nor d.dsel (ptxas 13.0 accepts it) on an H200.

    python hardware/video/video_c.py build DIR     # here: PTX -> sm_90a cubin (nvcc), inputs
    python3 DIR/video_c.py run DIR OUT  # device: CuPy runs the cubin, writes OUT/video_c.npz

One kernel: thread t loads a, b, c, d (ptxsim.testing.video_inputs.video_operands(), 1024 sets;
d is the destination's prior value), then runs every variant twice, with c and without, into
fresh copies of d, and stores both. Packed by hand into tests/data/hardware/video/video_c_sm90.npz.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

VARIANTS = [
    "vadd.u32.u32.u32 {d}, %a, %b{c};",
    "vadd.s32.s32.s32.sat {d}, %a, %b{c};",
    "vadd.u32.s32.u32 {d}, %a, %b{c};",
    "vsub.s32.u32.s32 {d}, %a, %b{c};",
    "vabsdiff.u32.u32.u32 {d}, %a, %b{c};",
    "vmin.s32.s32.s32 {d}, %a, %b{c};",
    "vmax.u32.u32.u32.sat {d}, %a, %b{c};",
    "vshl.u32.u32.u32.clamp {d}, %a, %b{c};",
    "vshr.s32.s32.u32.wrap {d}, %a, %b{c};",
    "vset.u32.u32.lt {d}, %a, %b{c};",
    "vadd.u32.u32.u32 {d}, %a.b1, %b.h1{c};",
    "vsub.s32.s32.s32.sat {d}, %a.h0, %b.b3{c};",
]
N = 1024


def ptx() -> str:
    body = []
    for k, v in enumerate(VARIANTS):
        for j, c in enumerate((", %c", "")):
            slot = 2 * k + j
            body.append(f"\tmov.b32 %o, %d;\n\t{v.format(d='%o', c=c)}\n"
                        f"\tst.global.u32 [%rd3+{slot * N * 4}], %o;")
    return f""".version 8.7
.target sm_90a
.address_size 64
.visible .entry video_c(.param .u64 pin, .param .u64 pout)
{{
\t.reg .b32 %a, %b, %c, %d, %o, %t;
\t.reg .b64 %rd<6>;
\tld.param.u64 %rd1, [pin];
\tld.param.u64 %rd2, [pout];
\tmov.u32 %t, %ctaid.x;
\tmov.u32 %o, %tid.x;
\tmad.lo.u32 %t, %t, 256, %o;
\tmul.wide.u32 %rd4, %t, 4;
\tadd.u64 %rd5, %rd1, %rd4;
\tadd.u64 %rd3, %rd2, %rd4;
\tld.global.u32 %a, [%rd5];
\tld.global.u32 %b, [%rd5+{N * 4}];
\tld.global.u32 %c, [%rd5+{2 * N * 4}];
\tld.global.u32 %d, [%rd5+{3 * N * 4}];
""" + "\n".join(body) + "\n\tret;\n}\n"


def build(d: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))
    from ptxsim.testing.video_inputs import video_operands
    d.mkdir(parents=True, exist_ok=True)
    (d / "video_c.ptx").write_text(ptx())
    subprocess.run(["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-cubin",
                    str(d / "video_c.ptx"), "-o", str(d / "video_c.cubin")], check=True)
    ops = video_operands(N)
    np.save(d / "video_c_in.npy", np.stack([ops[k] for k in "abcd"]).astype(np.uint32))
    (d / "video_c.py").write_text(Path(__file__).read_text())


def run(d: Path, out: Path) -> None:
    import cupy as cp
    mod = cp.RawModule(path=str(d / "video_c.cubin"))
    fn = mod.get_function("video_c")
    inp = cp.asarray(np.load(d / "video_c_in.npy"))
    res = []
    for poison in (0xDEADBEEF, 0x5A5A5A5A):
        o = cp.full((2 * len(VARIANTS), N), poison, cp.uint32)
        fn((N // 256,), (256,), (inp, o))
        cp.cuda.runtime.deviceSynchronize()
        res.append(o.get())
    assert (res[0] == res[1]).all(), "unwritten or non-deterministic output"
    props = cp.cuda.runtime.getDeviceProperties(0)
    np.savez_compressed(out / "video_c.npz", out=res[0].reshape(len(VARIANTS), 2, N),
                        variants=np.array(VARIANTS), device=props["name"].decode(),
                        driver=cp.cuda.runtime.driverGetVersion())
    print("ok", props["name"].decode())


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(Path(sys.argv[2]))
    else:
        run(Path(sys.argv[2]), Path(sys.argv[3]))
