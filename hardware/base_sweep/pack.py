"""Pack a device capture into tests/data/hardware/base_sweep/base_sm90.npz.

    python hardware/base_sweep/pack.py BUILD_DIR DEVICE_OUT_DIR [tests/data/hardware/base_sweep/base_sm90.npz]

Keys: instructions (V,) str; families (V,) str; forms (json: regs / inputs / outputs per form, in
order); outputs (R, 1024) uint32, the output rows of all forms concatenated (form v owns rows
row_offsets[v]:row_offsets[v+1]; .b64 registers take a low and a high row, .b16 zero-extended,
.pred 0/1); inputs_checksums (V,) str (base_inputs.inputs_checksum, verified on the device);
rejected_instructions / rejected_messages (ptxas sm_90a); machine, date_utc, ptxas, cupy, arch,
input_generator.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np


def main(build: Path, dev: Path, dest: Path) -> None:
    man = json.loads((build / "base.json").read_text())
    leg = json.loads((build / "legality.json").read_text())
    meta = json.loads((dev / "meta.json").read_text())
    status = json.loads((dev / "base_status.json").read_text())
    z = np.load(dev / "base_out.npz")
    items = [it for it in man["items"] if status.get(it["name"]) == "ok"]
    rows, offs = [], [0]
    for it in items:
        a = z[it["name"]]
        rows.append(a)
        offs.append(offs[-1] + a.shape[0])
    forms = [dict(regs=it["regs"], inputs=it["inputs"], outputs=it["outputs"]) for it in items]
    np.savez_compressed(
        dest,
        instructions=np.array([it["instruction"] for it in items]),
        families=np.array([it["family"] for it in items]),
        forms=np.array(json.dumps(forms)),
        outputs=np.concatenate(rows).astype(np.uint32),
        row_offsets=np.array(offs, dtype=np.int64),
        inputs_checksums=np.array([it["inputs_checksum"] for it in items]),
        rejected_instructions=np.array([r[0] for r in leg["rejected"]]),
        rejected_messages=np.array([r[1] for r in leg["rejected"]]),
        machine=np.array(meta["gpu"]), date_utc=np.array(meta["date_utc"]),
        ptxas=np.array(meta["build"]["ptxas_build_host"].splitlines()[-2]),
        cupy=np.array(meta["cupy"]), arch=np.array(meta["build"]["arch"]),
        input_generator=np.array("hardware/base_sweep/base_inputs.py operands(form), seed 0x5EED_BA5E"),
        not_ok=np.array(json.dumps({k: v for k, v in status.items() if v != "ok"})))
    print(f"{len(items)} forms, {offs[-1]} rows -> {dest} ({dest.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]),
         Path(sys.argv[3]) if len(sys.argv) > 3 else Path("tests/data/hardware/base_sweep/base_sm90.npz"))
