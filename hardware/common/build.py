"""Build everything the device run needs, on this (GPU-less) machine: cubins, manifests, inputs.

    python hardware/common/build.py [OUTDIR]        (default /work/main/.device/common)

Writes OUTDIR/{video.cubin, video.json, video_in.npy, mma.cubin, mma.json, mma_in.npz,
capture.py, legality.json}. capture.py (copied from hardware/common/) runs them on the GPU.
The instruction lists come from hardware/video/video_variants.py, hardware/mma_sp/mma_sp_forms.py
and hardware/stack/stack_cases.py.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
HW = HERE.parent
sys.path[:0] = [str(HERE), str(HW / "video"), str(HW / "mma_sp"), str(HW / "stack"),
                str(HW.parent / "src")]

from mma_sp_forms import decls as mma_decls, forms as mma_forms  # noqa: E402
from ptxgen import assemble, kernel, legal_subset, module  # noqa: E402
from video_variants import all_variants  # noqa: E402
from stack_cases import cases as stack_cases, decls as stack_decls, stack_sizes  # noqa: E402

from ptxsim.testing.gen import checksum  # noqa: E402
from ptxsim.testing.mma_sp_inputs import WARPS, mma_sp_inputs  # noqa: E402
from ptxsim.testing.video_inputs import video_operands, video_operands_checksum  # noqa: E402

ARCH = "sm_90a"
VIDEO_DECL = "  .reg .b32 %a, %b, %c, %d;"


def build(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    legality = {}
    # ---- video
    items = [dict(name=f"v{i}", instruction=t, inputs=["%a", "%b", "%c", "%d"], outputs=["%d"])
             for i, t in enumerate(all_variants())]
    ok, rej = legal_subset(items, ARCH, ARCH, lambda it: VIDEO_DECL)
    by = {it["name"]: it for it in items}
    legality["video_rejected_sm_90a"] = [[by[n]["instruction"], m] for n, m in rej.items()]
    assemble(module([kernel(it["name"], it["instruction"], it["inputs"], it["outputs"], VIDEO_DECL)
                     for it in ok], ARCH), ARCH, outdir / "video.cubin")
    ops = video_operands()
    np.save(outdir / "video_in.npy", np.stack([ops[k] for k in "abcd"]))
    (outdir / "video.json").write_text(json.dumps(
        dict(items=ok, inputs_checksum=video_operands_checksum(ops), threads=len(ops["a"])), indent=0))
    print(f"video: {len(ok)} legal, {len(rej)} rejected by ptxas")
    # ---- mma.sp
    fs = mma_forms()
    ok, rej = legal_subset(fs, ARCH, ARCH, mma_decls)
    by = {f["name"]: f for f in fs}
    legality["mma_rejected_sm_90a"] = [[by[n]["instruction"], m] for n, m in rej.items()]
    ok120, rej120 = legal_subset(fs, "sm_120a", "sm_120a", mma_decls)
    legality["mma_accepted_sm_120a"] = [f["instruction"] for f in ok120]
    legality["mma_rejected_sm_120a"] = [[by[n]["instruction"], m] for n, m in rej120.items()]
    assemble(module([kernel(f["name"], f["instruction"], f["inputs"], f["outputs"], mma_decls(f))
                     for f in ok], ARCH), ARCH, outdir / "mma.cubin")
    arrays = {}
    for f in ok:
        regs = mma_sp_inputs(f, WARPS)
        arr = np.stack([regs[r] for r in f["inputs"]])
        arrays[f["name"]] = arr
        f["inputs_checksum"] = checksum(arr)
        f["threads"] = arr.shape[1]
    np.savez(outdir / "mma_in.npz", **arrays)
    (outdir / "mma.json").write_text(json.dumps(dict(items=ok, warps=WARPS), indent=0))
    (outdir / "legality.json").write_text(json.dumps(legality, indent=0))
    print(f"mma.sp: {len(ok)} legal on {ARCH}, {len(rej)} rejected; sm_120a accepts {len(ok120)}")
    # ---- stack
    items = stack_cases()
    ok, rej = legal_subset(items, ARCH, ARCH, stack_decls)
    by = {it["name"]: it for it in items}
    legality["stack_rejected_sm_90a"] = [[by[n]["instruction"], m] for n, m in rej.items()]
    assemble(module([kernel(it["name"], it["instruction"], it["inputs"], it["outputs"], stack_decls(it))
                     for it in ok], ARCH), ARCH, outdir / "stack.cubin")
    np.save(outdir / "stack_in.npy", stack_sizes())
    (outdir / "stack.json").write_text(json.dumps(dict(items=ok), indent=0))
    (outdir / "legality.json").write_text(json.dumps(legality, indent=0))
    print(f"stack: {len(ok)} legal, {len(rej)} rejected: {sorted(set(rej.values()))}")
    shutil.copy(HERE / "capture.py", outdir / "capture.py")
    nv = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip()
    (outdir / "build_info.json").write_text(json.dumps(dict(nvcc_build_host=nv, arch=ARCH)))


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/main/.device/common"))
