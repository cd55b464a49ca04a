"""Build the dense mma.sync capture (run here, no GPU): cubin, manifest, inputs.

    python hardware/mma_sync/build.py [OUTDIR]        (default /work/main/.device/mma_sync)

Reuses hardware/common/ptxgen.py (kernel text, ptxas pruning) and hardware/common/capture.py
(the device-side runner):
OUTDIR/{mma.cubin, mma.json, mma_in.npz, capture.py, build_info.json, legality.json}.
Device:  python3 .device/mma_sync/capture.py run .device/mma_sync $OUT
         cuobjdump -sass .device/mma_sync/mma.cubin > $OUT/sass.txt
Inputs per form: warps 0..79 from ptxsim.testing.mma_sp_inputs (64 random, 16 special; regenerated
by the replay test), warps 80..87 the uniform probes of hardware/mma_sync/probes.py (dense forms; stored in the
packed file).  The sparse control forms keep all 88 generated warps (as in the first capture).
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "common"), str(HERE.parents[1] / "src")]

from forms import decls, forms  # noqa: E402
from probes import NPROBES, probe_registers  # noqa: E402
from ptxgen import assemble, kernel, legal_subset, module  # noqa: E402

from ptxsim.testing.gen import checksum  # noqa: E402
from ptxsim.testing.mma_sp_inputs import WARPS, mma_sp_inputs  # noqa: E402

ARCH = "sm_90a"
PROBE0 = WARPS - NPROBES          # 80


def inputs(f: dict) -> dict[str, np.ndarray]:
    regs = mma_sp_inputs(f, WARPS)
    if not f["sparse"]:
        for name, v in probe_registers(f).items():
            regs[name][32 * PROBE0:] = v
    return regs


def build(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    fs = forms()
    ok, rej = legal_subset(fs, ARCH, ARCH, decls)
    by = {f["name"]: f for f in fs}
    assemble(module([kernel(f["name"], f["instruction"], f["inputs"], f["outputs"], decls(f))
                     for f in ok], ARCH), ARCH, outdir / "mma.cubin")
    arrays = {}
    for f in ok:
        regs = inputs(f)
        arr = np.stack([regs[r] for r in f["inputs"]])
        arrays[f["name"]] = arr
        f["inputs_checksum"] = checksum(arr)
        f["threads"] = arr.shape[1]
    np.savez(outdir / "mma_in.npz", **arrays)
    (outdir / "mma.json").write_text(json.dumps(dict(items=ok, warps=WARPS, probe0=PROBE0), indent=0))
    (outdir / "legality.json").write_text(json.dumps(
        {"rejected_sm_90a": [[by[n]["instruction"], m] for n, m in rej.items()]}, indent=0))
    shutil.copy(HERE.parent / "common" / "capture.py", outdir / "capture.py")
    nv = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip()
    (outdir / "build_info.json").write_text(json.dumps(dict(nvcc_build_host=nv, arch=ARCH)))
    print(f"{len(ok)} forms legal on {ARCH}, {len(rej)} rejected: {rej}")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/main/.device/mma_sync"))
