"""Replay of the H200 tma_modes capture (hardware/tma_modes): cp.reduce.async.bulk into global
memory of 15 op / type pairs with subnormal, signed-zero, infinity, NaN and tie operands, and six
.im2col loads (offsets, traversal strides, the walk into the next image, 128B swizzle, a filter
base at the box corner); the same PTX text and inputs run by ptxsim (target sm_90a), compared
byte for byte. cp.reduce.async.bulk.tensor .add.f32 (FLOAT32 and FLOAT32_FTZ maps, a clipped box):
recorded in a second run with the kernel assembled by ptxas 13.5 (hardware/sincos_2pi/build.py;
the driver-JIT run had faulted), tensor_reduce_sm90.npz; .min.f32 faulted there too; and every
redOp on integer / 16-bit / f64 maps (tensor_reduce2_sm90.npz, hardware/sincos_2pi/tr_cases.py)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from ptxsim.machine.executor import Launch, launch
from ptxsim.machine.memory import GlobalMemory
from ptxsim.machine.tensormap import TensorMap

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "hardware" / "tma_modes"))
import cases  # noqa: E402
import kernels  # noqa: E402

REC_PATH = ROOT / "tests" / "data" / "hardware" / "tma_modes" / "tma_modes_sm90.npz"
pytestmark = pytest.mark.skipif(not REC_PATH.exists(), reason="no tma_modes record")
REC = np.load(REC_PATH) if REC_PATH.exists() else None
TR = np.load(ROOT / "tests" / "data" / "hardware" / "tma_modes" / "tensor_reduce_sm90.npz")


def _in_global(tm):
    """The 128 bytes of a bound map, as the buffer the kernel's `tmap` pointer names."""
    return np.frombuffer(tm.to_bytes(), np.uint8).copy()


def test_record_provenance():
    meta = json.loads(str(REC["meta"]))
    assert "H200" in meta["machine"] or "H100" in meta["machine"]
    assert meta["arch"] == "sm_90a"


@pytest.mark.parametrize("op", sorted(cases.REDUCE_OPS))
def test_bulk_reduce(op):
    dtype, old, new = cases.reduce_case(op)
    dst = old.copy()
    launch(kernels.head() + kernels.REDUCE.format(op=op), "k", 1, 32,
           args=[dst.view(np.uint8), new.view(np.uint8)], target="sm_90a")
    want = REC[f"reduce/{op}"]
    bad = np.flatnonzero(dst != want)
    assert not bad.size, (f"{bad.size} of {dst.size} elements differ, first at {bad[:4]}: old "
                          f"{old[bad[:4]]}, new {new[bad[:4]]}, ptxsim {dst[bad[:4]]}, "
                          f"hardware {want[bad[:4]]}")


@pytest.mark.parametrize("case", sorted(cases.TENSOR_REDUCE_CASES))
def test_tensor_reduce(case):
    dtype, op, coords = cases.TENSOR_REDUCE_CASES[case]
    if f"tensor_reduce/{case}" not in TR.files:
        log = " ".join(json.loads(str(TR["meta"]))["log"]["tr_global"])
        if f"{case}: sync: CUDA_ERROR_ILLEGAL_INSTRUCTION" not in log:
            pytest.skip("not reached on the H200 (after the .min.f32 fault in the same process); "
                        "max on FLOAT32_FTZ: test_tensor_reduce_every_op_and_map_type")
        from ptxsim.errors import IllegalInstructionError
        g, s = cases.tensor_reduce_data()
        gm = GlobalMemory()
        tm = TensorMap.encode_tiled(dtype, 2, g.copy(), (128, 64), (512,), (32, 32),
                                    swizzle="128B").bind(gm)
        with pytest.raises(IllegalInstructionError):
            Launch(kernels.head() + kernels.TENSOR_REDUCE.format(op=op), "k", 1, 128,
                   args=[_in_global(tm), s, *coords], target="sm_90a", gmem=gm).run()
        return
    g, s = cases.tensor_reduce_data()
    dst = g.copy()
    gm = GlobalMemory()
    tm = TensorMap.encode_tiled(dtype, 2, dst, (128, 64), (512,), (32, 32),
                                swizzle="128B").bind(gm)
    Launch(kernels.head() + kernels.TENSOR_REDUCE.format(op=op), "k", 1, 128,
           args=[_in_global(tm), s, *coords], target="sm_90a", gmem=gm).run()
    want = TR[f"tensor_reduce/{case}"]
    bad = np.argwhere(dst != want)
    assert not bad.size, (f"{len(bad)} elements differ, first {bad[:3].tolist()}: "
                          f"ptxsim {dst[tuple(bad[0])]:#x}, hardware {want[tuple(bad[0])]:#x}, "
                          f"global before {g[tuple(bad[0])]:#x}")


@pytest.mark.parametrize("case", sorted(cases.IM2COL_CASES))
def test_im2col(case):
    lo, up, st, ppc, cpp, crd, offs, swz = cases.IM2COL_CASES[case]
    x = cases.im2col_data()
    N, H, W, C = x.shape
    gm = GlobalMemory()
    tm = TensorMap.encode_im2col("float16", 4, x, (C, W, H, N), (C * 2, W * C * 2, H * W * C * 2),
                                 lo, up, cpp, ppc, element_strides=(1, st[0], st[1], 1),
                                 swizzle=swz).bind(gm)
    out = np.zeros(8192, np.uint8)
    Launch(kernels.head() + kernels.IM2COL, "k", 1, 32,
           args=[_in_global(tm), out, *[v & 0xFFFFFFFF for v in crd], *offs, ppc * cpp * 2],
           target="sm_90a", gmem=gm).run()
    n = ppc * max(cpp * 2, 128 if swz == "128B" else 0)
    want = REC[f"im2col/{case}"]
    got = out[:n].view(np.uint16).reshape(ppc, -1)
    exp = want[:n].view(np.uint16).reshape(ppc, -1)
    bad = np.argwhere(got != exp)
    assert not bad.size, f"{len(bad)} of {got.size} halves differ, first (pixel, half) " \
                         f"{bad[:6].tolist()}"


def _load_tr_cases():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "sincos_2pi_tr_cases", ROOT / "hardware" / "sincos_2pi" / "tr_cases.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TR_CASES = _load_tr_cases()
TR2 = np.load(ROOT / "tests" / "data" / "hardware" / "tma_modes" / "tensor_reduce2_sm90.npz")
TR2_LOG = json.loads(str(TR2["meta"]))["log"]


@pytest.mark.parametrize("case", sorted(TR_CASES.CASES))
def test_tensor_reduce_every_op_and_map_type(case):
    """The second H200 capture (hardware/sincos_2pi/tr_cases.py): integer, 16-bit and f64 maps
    with every redOp they pair with, bit-exact; .min / .max of f32-FTZ / f64 maps faulted there
    and raise IllegalInstructionError here."""
    from ptxsim.errors import IllegalInstructionError
    dtype, op, coords = TR_CASES.CASES[case]
    g, s = cases.tensor_reduce_data()
    dst = g.copy()
    gm = GlobalMemory()
    dims, strides, box = TR_CASES.geometry(dtype)
    tm = TensorMap.encode_tiled(dtype, 2, dst, dims, strides, box, swizzle="128B").bind(gm)
    run = Launch(kernels.head() + kernels.TENSOR_REDUCE.format(op=op), "k", 1, 128,
                 args=[_in_global(tm), s, *coords], target="sm_90a", gmem=gm).run
    if TR2_LOG[case] != "ok":
        assert "ILLEGAL_INSTRUCTION" in TR2_LOG[case]
        with pytest.raises(IllegalInstructionError):
            run()
        return
    run()
    want = TR2[f"xor/{case}"] ^ g
    bad = np.argwhere(dst != want)
    assert not bad.size, f"{len(bad)} words differ, first {bad[:3].tolist()}"
