"""Run the tma_modes kernels (kernels.py) on an sm_90a GPU through the CUDA driver (ctypes on
libcuda.so.1: the PTX is JIT-compiled by the driver, tensor maps come from
cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col) and write every output to OUT/tma_modes_sm90.npz:

    for s in reduce tensor_reduce im2col; do python3 probe.py OUT_DIR $s; done
    (each section in its own process: a fault ends the CUDA context; pack.py merges the files)

keys: reduce/<op> (the destination bytes after the reduction), tensor_reduce/<case> (the 64 x 128
global tensor after it), im2col/<case> (the first 8 KB of shared memory), plus meta (device name,
driver version, date). Inputs are regenerated from cases.py on both sides.
"""
from __future__ import annotations

import ctypes as C
import datetime
import json
import sys
from pathlib import Path

import numpy as np

import cases
import kernels

cu = C.CDLL("libcuda.so.1")


def check(r, what):
    if r:
        name = C.c_char_p()
        cu.cuGetErrorName(r, C.byref(name))
        raise RuntimeError(f"{what}: {name.value.decode() if name.value else r}")


check(cu.cuInit(0), "cuInit")
dev = C.c_int()
check(cu.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
ctx = C.c_void_p()
check(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "ctx")
check(cu.cuCtxSetCurrent(ctx), "ctx current")
name = C.create_string_buffer(128)
cu.cuDeviceGetName(name, 128, dev)
drv = C.c_int()
cu.cuDriverGetVersion(C.byref(drv))


def module(ptx: str):
    mod, fn = C.c_void_p(), C.c_void_p()
    check(cu.cuModuleLoadData(C.byref(mod), C.c_char_p(ptx.encode() + b"\0")), "load")
    check(cu.cuModuleGetFunction(C.byref(fn), mod, b"k"), "function")
    return fn


def alloc(host: np.ndarray) -> C.c_uint64:
    p = C.c_uint64()
    check(cu.cuMemAlloc_v2(C.byref(p), C.c_size_t(max(host.nbytes, 16))), "alloc")
    check(cu.cuMemcpyHtoD_v2(p, host.ctypes.data_as(C.c_void_p), C.c_size_t(host.nbytes)), "h2d")
    return p


def fetch(p, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    check(cu.cuMemcpyDtoH_v2(out.ctypes.data_as(C.c_void_p), p, C.c_size_t(out.nbytes)), "d2h")
    return out


def launch(fn, block: int, params: list):
    """params: ctypes scalars (passed by address) or 128-byte numpy tensor maps."""
    ptrs = [p.ctypes.data if isinstance(p, np.ndarray) else C.addressof(p) for p in params]
    arr = (C.c_void_p * len(ptrs))(*ptrs)
    check(cu.cuLaunchKernel(fn, 1, 1, 1, block, 1, 1, 0, None, arr, None), "launch")
    check(cu.cuCtxSynchronize(), "sync")


def tmap_buffer() -> np.ndarray:
    """128 bytes at a 64-byte aligned address (the driver's requirement)."""
    raw = np.zeros(256, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off:off + 128]


DTYPE = {"float16": 6, "float32": 7, "float32_ftz": 10}
SWIZ = {"none": 0, "128B": 3}
U64 = C.c_uint64


def encode_tiled(dtype, addr, dims, strides, box, swizzle):
    tm = tmap_buffer()
    r = len(dims)
    check(cu.cuTensorMapEncodeTiled(
        C.c_void_p(tm.ctypes.data), DTYPE[dtype], r, C.c_void_p(addr), (U64 * r)(*dims),
        (U64 * (r - 1))(*strides), (C.c_uint32 * r)(*box), (C.c_uint32 * r)(*([1] * r)), 0,
        SWIZ[swizzle], 0, 0), "encode tiled")
    return tm


def encode_im2col(dtype, addr, dims, strides, lower, upper, cpp, ppc, es, swizzle):
    tm = tmap_buffer()
    r = len(dims)
    check(cu.cuTensorMapEncodeIm2col(
        C.c_void_p(tm.ctypes.data), DTYPE[dtype], r, C.c_void_p(addr), (U64 * r)(*dims),
        (U64 * (r - 1))(*strides), (C.c_int * (r - 2))(*lower), (C.c_int * (r - 2))(*upper),
        C.c_uint32(cpp), C.c_uint32(ppc), (C.c_uint32 * r)(*es), 0, SWIZ[swizzle], 0, 0),
        "encode im2col")
    return tm


def main(out_dir: Path, section: str):
    res = {}
    for op in cases.REDUCE_OPS if section == "reduce" else ():
        dtype, old, new = cases.reduce_case(op)
        fn = module(kernels.head() + kernels.REDUCE.format(op=op))
        d, s = alloc(old), alloc(new)
        launch(fn, 32, [d, s])
        res[f"reduce/{op}"] = fetch(d, old)
    g, s = cases.tensor_reduce_data()
    variant = section.partition(":")[2]               # diagnosis runs: notile / noswz
    for case, (dtype, op, coords) in (cases.TENSOR_REDUCE_CASES.items()
                                      if section.startswith("tensor_reduce") else ()):
        text = kernels.TENSOR_REDUCE.format(op=op)
        if variant == "notile":
            text = text.replace(".tile.bulk_group", ".bulk_group")
        fn = module(kernels.head() + text)
        d, src = alloc(g), alloc(s)
        tm = encode_tiled(dtype, d.value, (128, 64), (512,), (32, 32),
                          "none" if variant == "noswz" else "128B")
        launch(fn, 128, [alloc(tm), src, C.c_uint32(coords[0]), C.c_uint32(coords[1])])
        res[f"tensor_reduce/{case}"] = fetch(d, g)
        res[f"tensor_reduce_map/{case}"] = tm.copy()
    x = cases.im2col_data()
    fn = module(kernels.head() + kernels.IM2COL) if section == "im2col" else None
    for case, (lo, up, st, ppc, cpp, crd, offs, swz) in (cases.IM2COL_CASES.items()
                                                           if section == "im2col" else ()):
        d, o = alloc(x), alloc(np.full(8192, 0xAB, np.uint8))
        N, H, W, Cn = x.shape
        tm = encode_im2col("float16", d.value, (Cn, W, H, N), (Cn * 2, W * Cn * 2, H * W * Cn * 2),
                           lo, up, cpp, ppc, (1, st[0], st[1], 1), swz)
        launch(fn, 32, [alloc(tm), o] + [C.c_uint32(v & 0xFFFFFFFF) for v in crd] +
               [C.c_uint32(v) for v in offs] + [C.c_uint32(ppc * cpp * 2)])
        res[f"im2col/{case}"] = fetch(o, np.zeros(8192, np.uint8))
        res[f"im2col_map/{case}"] = tm.copy()
    meta = {"machine": name.value.decode(), "driver": drv.value,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "arch": "sm_90a"}
    out_dir.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out_dir / f"tma_modes_sm90_{section.replace(':', '_')}.npz", meta=np.array(json.dumps(meta)),
                        **res)
    print(json.dumps(meta), len(res), "outputs")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
