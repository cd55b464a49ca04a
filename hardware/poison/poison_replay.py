"""Run the poison probes and the Triton kernels on ptxsim with the inputs poison_capture.py gave the
H200, and compare with the record (tests/data/hardware/poison/poison_h200.npz).

    python hardware/poison/poison_replay.py        prints one line per probe

The functions are what tests/machine/test_poison_hw.py calls.
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import poison_capture as capture  # noqa: E402
import poison_kernels as kernels  # noqa: E402

RECORD = ROOT / "tests" / "data" / "hardware" / "poison" / "poison_h200.npz"
PTX_DIR = ROOT / "tests" / "data" / "ptx" / "triton" / "poison"


def _execute(text: str, regs: dict) -> dict:
    """ptxsim.execute of one instruction, returning the bits it computes also where they are
    poison (PoisonValueError.values)."""
    import ptxsim
    from ptxsim.errors import PoisonValueError
    try:
        return dict(ptxsim.execute(text, regs))
    except PoisonValueError as e:
        return dict(e.values)


def _typed(v: np.ndarray, t: str) -> np.ndarray:
    n = kernels.BITS[t]
    return v.astype({16: np.uint16, 32: np.uint32, 64: np.uint64}[n])


def division(name: str, inputs: np.ndarray) -> np.ndarray:
    """What ptxsim computes for a division probe, (rows, 2) or (rows, 3) uint64 zero-extended as
    the probe stores them: the instructions through ptxsim.execute (a zero divisor gives poison,
    whose bits are kept here), 32 rows at a time."""
    rows = inputs.shape[0]
    if name == "triton_tile":
        out = np.zeros((rows, 3), np.uint64)
        for w in range(0, rows, 32):
            a = inputs[w:w + 32]
            r = {"%r1": (a[:, 0] & np.uint64(0xFFFFFFFF)).astype(np.uint32),
                 "%r2": (a[:, 0] >> np.uint64(32)).astype(np.uint32),
                 "%r3": a[:, 1].astype(np.uint32)}
            for text in ("div.s32 %r4, %r1, %r3;", "shl.b32 %r5, %r4, 3;",
                         "sub.s32 %r6, %r2, %r5;", "min.s32 %r7, %r6, 8;",
                         "rem.s32 %r8, %r1, %r7;", "mul.lo.s32 %r9, %r4, %r3;",
                         "sub.s32 %r10, %r1, %r9;", "div.s32 %r11, %r10, %r7;"):
                srcs = [x.strip(" ;,") for x in text.split()[2:]]
                got = _execute(text, {k: r[k] for k in srcs if k in r})
                r.update({k: np.asarray(v).astype(np.uint32) for k, v in got.items()})
            out[w:w + 32] = np.stack([r["%r7"], r["%r8"], r["%r11"]], 1).astype(np.uint64)
        return out
    t = name.split("_")[-1]
    ops = ("div", "rem") if name.startswith("pair_") else (name.split("_")[1],)
    out = np.zeros((rows, 2), np.uint64)
    for w in range(0, rows, 32):
        a = _typed(inputs[w:w + 32, 0], t)
        b = _typed(inputs[w:w + 32, 1], t)
        for k, op in enumerate(ops):
            got = _execute(f"{op}.{t} %d, %a, %b;", {"%a": a, "%b": b})["%d"]
            out[w:w + 32, k] = _typed(np.asarray(got), t).astype(np.uint64)
    return out


def division_kernel(name: str, inputs: np.ndarray) -> np.ndarray:
    """The probe kernel itself on ptxsim (rows whose divisor is not 0: no poison)."""
    from ptxsim.machine.executor import launch
    out = np.zeros((inputs.shape[0], 3 if name == "triton_tile" else 2), np.uint64)
    launch(kernels.module(), name, 1, inputs.shape[0], args=[inputs.copy(), out],
           sanitize="none")
    return out


def mapa() -> np.ndarray:
    from ptxsim.machine.executor import launch
    d = np.zeros(64 * 6, np.uint32)
    launch(kernels.module(), "mapa_probe", 2, 32, cluster=2, args=[d], sanitize="none")
    return d.reshape(64, 6)


def cpasync(mode: int, src: int) -> np.ndarray:
    from ptxsim.machine.executor import launch
    d = np.full(64, 0x5A, np.uint8)
    launch(kernels.module(), "cpasync_probe", 1, 4, args=[d, np.uint64(src), np.uint32(mode)])
    return d


def triton_kernel(k: dict) -> np.ndarray:
    """The output of Triton kernel `k` (a manifest entry) on ptxsim for capture's inputs."""
    from ptxsim.machine.executor import launch
    ptx = (PTX_DIR / f"{k.get('same_as', k['name'])}.ptx").read_text()
    if k["kind"] == "scan":
        x, y = capture.scan_inputs()
        xb = (x.view(np.uint32) >> 16).astype(np.uint16)
        yb = (y.view(np.uint32) >> 16).astype(np.uint16)
        z = np.zeros((8, 32), np.float32)
        launch(ptx, k["entry"], 1, k["block"], args=[xb, yb, z, np.uint64(0), np.uint64(0)],
               dynamic_shared=k["shared"])
        return z
    a, b = capture.persistent_inputs()
    M, K = a.shape
    N = b.shape[1]
    c = np.zeros((M, N), np.float16)
    launch(ptx, k["entry"], k["grid"], k["block"],
           args=[a, b, c, np.int32(M), np.int32(N), np.int32(K), np.int32(K), np.int32(N),
                 np.int32(N), np.uint64(0), np.uint64(0)], dynamic_shared=k["shared"])
    return c


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def main() -> None:
    rec = np.load(RECORD) if RECORD.exists() else None
    man = json.loads((HERE / "manifest.json").read_text())
    for name in kernels.division_names():
        inp = kernels.triton_tile_inputs() if name == "triton_tile" else kernels.division_inputs()
        got = division(name, inp)
        if name != "triton_tile":
            ctl = division_kernel(name, inp[inp.shape[0] // 2:])
            print(name, "kernel = execute on the controls:",
                  bool((ctl == got[inp.shape[0] // 2:]).all()))
        if rec is not None:
            for tag in man["probes"]:
                exp = rec[f"div_{tag}_{name}"]
                print(name, tag, "rows equal:", int((exp == got).all(1).sum()), "of", len(exp))
        else:
            print(name, got[:3].tolist())
    for label, fn in [("mapa", lambda: mapa()[:4].tolist())] + [
            (f"cp.async mode {m} src {int(w):#x}", lambda m=m, w=w: cpasync(m, int(w)).tolist())
            for m in (0, 1, 2) for w in kernels.WILD]:
        try:
            print(label, fn())
        except Exception as e:  # noqa: BLE001
            print(label, f"{type(e).__name__}: {str(e)[:200]}")
    for k in man["triton"]:
        out = triton_kernel(k)
        line = f"{k['name']}: sha256 {sha256(out)[:16]}"
        if rec is not None:
            key = f"persistent_{k.get('same_as', k['name'])}_sha256"
            if key in rec.files:
                line += f" hardware {str(rec[key])[:16]}"
        print(line)


if __name__ == "__main__":
    main()
