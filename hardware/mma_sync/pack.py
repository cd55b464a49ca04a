"""Pack the device run of hardware/mma_sync/build.py into
tests/data/hardware/mma_sync/mma_sync_sm90.npz (+ the SASS).

    python hardware/mma_sync/pack.py BUILD_DIR DEVICE_OUT_DIR [DEST]
        (defaults /work/main/.device/mma_sync, -, tests/data/hardware/mma_sync)

Keys: instructions (F,), forms_json (per form: instruction, shape, types, register counts,
inputs, outputs, inputs_checksum), outputs (F, 8, 32*warps) uint32 (rows >= d_regs zero),
warps, probe0 (first probe warp of the dense forms), probe_inputs (F, 16, 32*(warps-probe0))
uint32 (the probe warps' input registers in `inputs` order, zero padded), status, provenance.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np


def pack(build: Path, dev: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    meta = json.loads((dev / "meta.json").read_text())
    man = json.loads((build / "mma.json").read_text())
    out = np.load(dev / "mma_out.npz")
    status = json.loads((dev / "mma_status.json").read_text())
    inp = np.load(build / "mma_in.npz")
    items, warps, p0 = man["items"], man["warps"], man["probe0"]
    T = 32 * warps
    outputs = np.zeros((len(items), 8, T), np.uint32)
    probes = np.zeros((len(items), 16, T - 32 * p0), np.uint32)
    for i, it in enumerate(items):
        o = out[it["name"]]
        outputs[i, :o.shape[0]] = o
        x = inp[it["name"]]
        probes[i, :x.shape[0]] = x[:, 32 * p0:]
    keep = ("instruction", "shape", "dtype", "atype", "btype", "ctype", "sparse", "a_regs",
            "b_regs", "c_regs", "d_regs", "a_bits", "b_bits", "meta", "selector", "spvariant",
            "inputs", "outputs", "inputs_checksum")
    np.savez_compressed(
        dest / "mma_sync_sm90.npz",
        instructions=np.array([it["instruction"] for it in items]),
        forms_json=np.array(json.dumps([{k: it[k] for k in keep} for it in items])),
        outputs=outputs, warps=np.array(warps), probe0=np.array(p0), probe_inputs=probes,
        status=np.array([status[it["name"]] for it in items]),
        machine=np.array(meta["gpu"]), date_utc=np.array(meta["date_utc"]),
        nvcc=np.array(meta["build"]["nvcc_build_host"].splitlines()[-2]),
        cupy=np.array(meta["cupy"]), arch=np.array("sm_90a"),
        rejected=np.array(json.loads((build / "legality.json").read_text())["rejected_sm_90a"]))
    # the SASS ptxas 13.0 produced, instruction lines only, per kernel (with its PTX text)
    sass = (dev / "sass.txt").read_text()
    names = {it["name"]: it["instruction"] for it in items}
    lines, cur = [], None
    for ln in sass.splitlines():
        m = re.search(r"Function : (\S+)", ln)
        if m:
            cur = m.group(1)
            lines.append(f"\n== {cur}: {names.get(cur, '?')}")
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4})\*/\s+(.*?)\s*;?\s*/\*", ln)
        if cur and m and not m.group(2).startswith(("NOP", "BRA")):
            lines.append(f"{m.group(1)}  {m.group(2)}")
    (dest / "mma_sync_sm90_sass.txt").write_text(
        f"cuobjdump -sass of the captured kernels ({meta['gpu']}, {meta['date_utc']})\n"
        + "\n".join(lines) + "\n")
    (dest / "capture_log.txt").write_text((dev / "capture_log.txt").read_text())


if __name__ == "__main__":
    a = sys.argv[1:] + [None] * 3
    pack(Path(a[0] or "/work/main/.device/mma_sync"), Path(a[1]), Path(a[2] or "tests/data/hardware/mma_sync"))
