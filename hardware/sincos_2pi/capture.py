"""Device side of the sin / cos .approx.ftz.2pi.f32 capture (H200, sm_90a). Needs, in one folder:
this file, inputs.py, sincos_2pi.cubin (build.py); run from a
checkout of the repository (the model's table src/ptxsim/data/mufu_sm90_sincos.npz), and for the
tensor-reduce diagnosis hardware/tma_modes/{probe,cases,kernels}.py with tr_*.cubin.

    python3 capture.py OUT sincos        -> OUT/sincos_2pi_sm90.npz
    python3 capture.py OUT tr_global|tr_param  -> OUT/tensor_reduce_<v>.txt (each its own process)
"""
from __future__ import annotations

import ctypes as C
import datetime
import json
import sys
from pathlib import Path

import numpy as np

import probe          # hardware/tma_modes/probe.py: cuInit, context, alloc / fetch / launch
from probe import C as _C, alloc, check, cu, fetch

HERE = Path(__file__).resolve().parent


def load(cubin: Path, name: bytes):
    mod, fn = C.c_void_p(), C.c_void_p()
    data = cubin.read_bytes()
    check(cu.cuModuleLoadData(C.byref(mod), C.c_char_p(data)), f"load {cubin.name}")
    check(cu.cuModuleGetFunction(C.byref(fn), mod, name), "function")
    return fn


def grid_launch(fn, grid: int, block: int, params: list):
    ptrs = [C.addressof(p) for p in params]
    arr = (C.c_void_p * len(ptrs))(*ptrs)
    check(cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, None, arr, None), "launch")
    check(cu.cuCtxSynchronize(), "sync")


def quarter_table() -> np.ndarray:
    """Q of ptxsim.isa.floating._sin_quarter_table, from the repository's data file (the device
    runs in a checkout of the repository)."""
    for root in (Path.cwd(), *Path.cwd().parents):
        f = root / "src" / "ptxsim" / "data" / "mufu_sm90_sincos.npz"
        if f.is_file():
            with np.load(f) as d:
                first, diff = int(d["sin_q_first"]), d["sin_q_diff"]
            t = np.concatenate([[0], np.cumsum(diff, dtype=np.int64)]) + first
            return t.astype(np.uint32)
    raise FileNotFoundError("src/ptxsim/data/mufu_sm90_sincos.npz")


def sincos(out: Path):
    import inputs
    cub = HERE / "sincos_2pi.cubin"
    x = inputs.sample()
    fn = load(cub, b"sample")
    d_in, d_s, d_c = alloc(x), alloc(np.zeros_like(x)), alloc(np.zeros_like(x))
    grid_launch(fn, x.size // 256, 256, [d_in, d_s, d_c, C.c_uint32(x.size)])
    s, c = fetch(d_s, x), fetch(d_c, x)
    q = quarter_table()
    chk = load(cub, b"check")
    d_q, d_res, d_bad = alloc(q), alloc(np.zeros(3, np.uint64)), alloc(np.full(2, 0xFFFFFFFF, np.uint32))
    t0 = datetime.datetime.now()
    grid_launch(chk, 1 << 20, 256, [d_q, d_res, d_bad, C.c_uint32(0)])
    res, bad = fetch(d_res, np.zeros(3, np.uint64)), fetch(d_bad, np.zeros(2, np.uint32))
    secs = (datetime.datetime.now() - t0).total_seconds()
    meta = {"machine": probe.name.value.decode(), "driver": probe.drv.value,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "arch": "sm_90a", "cubin": "ptxas 13.5 (nvidia-cuda-nvcc 13.5.37) -arch=sm_90a",
            "check_seconds": secs}
    out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out / "sincos_2pi_sm90.npz", meta=np.array(json.dumps(meta)), inputs=x,
                        sin=s, cos=c, check_counts=res, check_first_bad=bad)
    print(json.dumps(meta), "check (sin bad, cos bad, inputs):", res.tolist(),
          "first bad:", [hex(int(b)) for b in bad])


def tensor_reduce(out: Path, variant: str):
    """The H200's CUDA_ERROR_ILLEGAL_INSTRUCTION of hardware/tma_modes, diagnosed: the same
    kernel assembled offline by ptxas 13.5 (tr_global: the map in global memory as before;
    tr_param: the map a __grid_constant__-style kernel parameter)."""
    import cases
    g, s = cases.tensor_reduce_data()
    lines, res = [], {}
    out.mkdir(parents=True, exist_ok=True)
    for case, (dtype, op, coords) in cases.TENSOR_REDUCE_CASES.items():
        try:
            fn = load(HERE / f"{variant}_{op}.cubin", b"k")
            d, src = alloc(g), alloc(s)
            tm = probe.encode_tiled(dtype, d.value, (128, 64), (512,), (32, 32), "128B")
            first = alloc(tm) if variant == "tr_global" else tm
            probe.launch(fn, 128, [first, src, C.c_uint32(coords[0]), C.c_uint32(coords[1])])
            res[f"tensor_reduce/{case}"] = fetch(d, g)
            res[f"tensor_reduce_map/{case}"] = tm.copy()
            lines.append(f"{case}: ok")
        except RuntimeError as e:
            lines.append(f"{case}: {e}")
            break                                    # a fault ends the context
    np.savez_compressed(out / f"tensor_reduce_{variant}.npz", **res)
    (out / f"tensor_reduce_{variant}.txt").write_text("\n".join(lines) + "\n")
    print(variant, lines)


def tensor_reduce2(tmp: Path, case: str):
    """One tr_cases.CASES case in this process (a fault ends the context): tmp/<case>.npy or
    tmp/<case>.err."""
    import cases
    import tr_cases
    dtype, op, coords = tr_cases.CASES[case]
    g, s = cases.tensor_reduce_data()
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        fn = load(HERE / f"tr_global_{op}.cubin", b"k")
        d, src = alloc(g), alloc(s)
        dims, strides, box = tr_cases.geometry(dtype)
        tm = probe.tmap_buffer()
        U64 = C.c_uint64
        check(cu.cuTensorMapEncodeTiled(
            C.c_void_p(tm.ctypes.data), tr_cases.CU_DTYPE[dtype], 2, C.c_void_p(d.value),
            (U64 * 2)(*dims), (U64 * 1)(*strides), (C.c_uint32 * 2)(*box),
            (C.c_uint32 * 2)(1, 1), 0, 3, 0, 0), "encode tiled")
        probe.launch(fn, 128, [alloc(tm), src, C.c_uint32(coords[0]), C.c_uint32(coords[1])])
        np.save(tmp / f"{case}.npy", fetch(d, g))
    except RuntimeError as e:
        (tmp / f"{case}.err").write_text(str(e))


def tensor_reduce2_pack(out: Path, tmp: Path):
    import tr_cases
    res, log = {}, {}
    for case in tr_cases.CASES:
        if (tmp / f"{case}.npy").exists():
            res[f"tensor_reduce/{case}"] = np.load(tmp / f"{case}.npy")
            log[case] = "ok"
        else:
            err = tmp / f"{case}.err"
            log[case] = err.read_text() if err.exists() else "no result"
    out.mkdir(parents=True, exist_ok=True)
    meta = {"machine": probe.name.value.decode(), "driver": probe.drv.value,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "arch": "sm_90a", "cubin": "ptxas 13.5 -arch=sm_90a", "log": log}
    np.savez_compressed(out / "tensor_reduce2_sm90.npz", meta=np.array(json.dumps(meta)), **res)
    print(json.dumps(log))


if __name__ == "__main__":
    o, what = Path(sys.argv[1]), sys.argv[2]
    if what == "sincos":
        sincos(o)
    elif what.startswith("tr2:"):
        tensor_reduce2(o, what[4:])
    elif what == "tr2pack":
        tensor_reduce2_pack(o, Path(sys.argv[3]))
    else:
        tensor_reduce(o, what)
