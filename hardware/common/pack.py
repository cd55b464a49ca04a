"""Pack the device run's outputs into the committed vector files: DEST/video/video_sm90.npz,
DEST/mma_sp/mma_sp_sm90.npz, DEST/stack/stack_sm90.npz and the run's log DEST/common/capture_log.txt.

    python hardware/common/pack.py BUILD_DIR DEVICE_OUT_DIR [DEST]
        (defaults /work/main/.device/common, -, tests/data/hardware)

File formats: hardware/video/README.md, hardware/mma_sp/README.md, hardware/stack/README.md.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def pack(build: Path, dev: Path, dest: Path) -> None:
    for fam in ("video", "mma_sp", "stack", "common"):
        (dest / fam).mkdir(parents=True, exist_ok=True)
    meta = json.loads((dev / "meta.json").read_text())
    legality = json.loads((build / "legality.json").read_text())
    common = dict(
        machine=np.array(meta["gpu"]), date_utc=np.array(meta["date_utc"]),
        nvcc=np.array(meta["build"]["nvcc_build_host"].splitlines()[-2]),
        cupy=np.array(meta["cupy"]), arch=np.array("sm_90a"))
    # ---- video
    man = json.loads((build / "video.json").read_text())
    out = np.load(dev / "video_out.npz")
    status = json.loads((dev / "video_status.json").read_text())
    items = man["items"]
    assert all(status[it["name"]] == "ok" for it in items)
    rej = legality["video_rejected_sm_90a"]
    np.savez_compressed(
        dest / "video" / "video_sm90.npz",
        instructions=np.array([it["instruction"] for it in items]),
        outputs=np.stack([out[it["name"]][0] for it in items]).astype(np.uint32),
        input_registers=np.array(["%a", "%b", "%c", "%d"]),
        inputs_checksum=np.array(man["inputs_checksum"]),
        input_generator=np.array("ptxsim.testing.video_inputs.video_operands()"),
        rejected_instructions=np.array([r[0] for r in rej]),
        rejected_messages=np.array([r[1] for r in rej]),
        **common)
    # ---- mma.sp
    man = json.loads((build / "mma.json").read_text())
    out = np.load(dev / "mma_out.npz")
    status = json.loads((dev / "mma_status.json").read_text())
    items = man["items"]
    T = items[0]["threads"]
    outputs = np.zeros((len(items), 4, T), np.uint32)
    for i, it in enumerate(items):
        if it["name"] in out.files:
            o = out[it["name"]]
            outputs[i, :o.shape[0]] = o
    keep = ("instruction", "spvariant", "shape", "dtype", "atype", "btype", "ctype", "selector",
            "a_regs", "b_regs", "c_regs", "d_regs", "a_bits", "b_bits", "meta", "inputs", "outputs",
            "inputs_checksum")
    forms = [{k: it[k] for k in keep} for it in items]
    np.savez_compressed(
        dest / "mma_sp" / "mma_sp_sm90.npz",
        instructions=np.array([it["instruction"] for it in items]),
        status=np.array([status[it["name"]] for it in items]),
        outputs=outputs,
        d_regs=np.array([it["d_regs"] for it in items]),
        forms_json=np.array(json.dumps(forms)),
        warps=np.array(man["warps"]),
        regimes_json=np.array(json.dumps([["random", 64], ["special", 16], ["anymeta", 8]])),
        input_generator=np.array("ptxsim.testing.mma_sp_inputs.mma_sp_inputs(form, warps)"),
        rejected_sm_90a=np.array([r[0] for r in legality["mma_rejected_sm_90a"]]),
        rejected_sm_90a_messages=np.array([r[1] for r in legality["mma_rejected_sm_90a"]]),
        accepted_sm_120a=np.array(legality["mma_accepted_sm_120a"]),
        **common)
    if (dev / "stack_out.npz").exists():
        pack_stack(build, dev, dest, common)
    (dest / "common" / "capture_log.txt").write_text(
        "\n".join(ln for ln in (dev / "capture_log.txt").read_text().splitlines()
                  if ln.startswith(("worker", "video", "mma", "{", "cupy_backends.cuda.api.runtime"))))
    print("packed", [(str(p.relative_to(dest)), p.stat().st_size) for p in dest.glob("*/*.npz")])


def pack_stack(build: Path, dev: Path, dest: Path, common: dict) -> None:
    man = json.loads((build / "stack.json").read_text())
    out = np.load(dev / "stack_out.npz")
    status = json.loads((dev / "stack_status.json").read_text())
    items = man["items"]
    T = 1024
    outputs = np.zeros((len(items), 8, T), np.uint32)
    for i, it in enumerate(items):
        if it["name"] in out.files:
            o = out[it["name"]]
            outputs[i, :o.shape[0]] = o
    np.savez_compressed(
        dest / "stack" / "stack_sm90.npz",
        names=np.array([it["name"] for it in items]),
        bodies=np.array([it["instruction"] for it in items]),
        types=np.array([it["type"] for it in items]),
        aligns=np.array([-1 if it["align"] is None else it["align"] for it in items]),
        overflow=np.array([it["overflow"] for it in items]),
        status=np.array([status[it["name"]] for it in items]),
        outputs=outputs, sizes=np.load(build / "stack_in.npy"),
        stack_size_limit=np.array(1024), **common)


if __name__ == "__main__":
    a = sys.argv[1:]
    pack(Path(a[0]) if a else Path("/work/main/.device/common"), Path(a[1]),
         Path(a[2]) if len(a) > 2 else HERE.parents[1] / "tests" / "data" / "hardware")
