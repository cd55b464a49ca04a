"""ptxsim's TMA tile loads against shared-memory bytes recorded on a real GPU.

hardware/tma/tma_probe.cu ran each case of make_cases.py on an NVIDIA H100/H200
(sm_90a: the same cp.async.bulk.tensor tile mode and 32B/64B/128B swizzles as sm_100a) and saved
what the TMA engine wrote into 8 KB of shared memory prefilled with 0xAB (box at offset 2048 of a
1024-byte aligned buffer). data/tma_sm90.npz holds those bytes (`smem`) and whether the kernel
completed (`completed`; cases 4, 5, 8, 13 faulted with an illegal instruction).
Recorded 2026-11-21 on an NVIDIA H200, driver 580.159.04, CUDA 13.0 (the source was compiled there
with nvcc -arch=sm_90a and each case run in its own process)."""
import os
import sys

import numpy as np
import pytest

from ptxsim.errors import IllegalInstructionError
from ptxsim.machine.memory import GlobalMemory
from ptxsim.machine.tensormap import TensorMap, tma_load_tile, tma_store_tile

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "hardware", "tma"))
from make_cases import CASES, esize, nbytes  # noqa: E402

DATA = os.path.join(HERE, "..", "data", "hardware", "tma", "tma_sm90.npz")
pytestmark = pytest.mark.skipif(not os.path.exists(DATA), reason="no recorded hardware data")


def pattern_buffer(case) -> np.ndarray:
    e = esize(case["dtype"])
    w = np.arange(nbytes(case) // e)
    if e == 2:
        return ((w % 30000) + 1).astype("<u2").view(np.uint8)
    return (w + 1).astype("<f4").view(np.uint8)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_tile_load_matches_hardware(i):
    case = CASES[i]
    rec = np.load(DATA)
    g = GlobalMemory()
    buf = pattern_buffer(case)
    addr = g.map(buf)
    tm = TensorMap.encode_tiled(case["dtype"], len(case["dims"]), addr, case["dims"],
                                case["strides"], case["box"], case.get("es"),
                                swizzle=case["swizzle"],
                                oob_fill="nan_request_zero_fma" if case.get("oob") else "none")
    smem = np.full(8192, 0xAB, np.uint8)
    if not rec["completed"][i]:
        # the hardware stopped this kernel with "an illegal instruction was encountered"
        with pytest.raises(IllegalInstructionError, match="illegal instruction"):
            tma_load_tile(tm, case["coords"], g, smem, 2048)
        return
    tma_load_tile(tm, case["coords"], g, smem, 2048)
    np.testing.assert_array_equal(smem, rec["smem"][i])


STORE = os.path.join(HERE, "..", "data", "hardware", "tma", "tma_store_sm90.npz")


@pytest.mark.skipif(not os.path.exists(STORE), reason="no recorded hardware data")
@pytest.mark.parametrize("i", range(14))
def test_tile_store_matches_hardware(i):
    """hardware/tma/tma_store_probe.cu on an H200 (2026-11-21): shared memory holds the
    16-bit words w+1 from a 1024-aligned buffer, the box at offset 2048 is stored into a 72 x 40
    uint16 tensor prefilled with 0xCDCD. `cases` = (swizzle enum, box0, box1, c0, c1); cases
    with a negative coordinate or a misaligned inner coordinate faulted."""
    rec = np.load(STORE)
    sw, b0, b1, c0, c1 = (int(x) for x in rec["cases"][i])
    g = GlobalMemory()
    A = np.full((40, 72), 0xCDCD, np.uint16)
    tm = TensorMap.for_array(A, (b0, b1), swizzle={0: "none", 1: "32B", 2: "64B", 3: "128B"}[sw])
    tm = tm.bind(g)
    smem = (np.arange(4096) + 1).astype("<u2").view(np.uint8).copy()
    if not rec["completed"][i]:
        with pytest.raises(IllegalInstructionError, match="illegal instruction"):
            tma_store_tile(tm, (c0, c1), g, smem, 2048)
        return
    tma_store_tile(tm, (c0, c1), g, smem, 2048)
    np.testing.assert_array_equal(A, rec["gmem"][i])


MULTICAST = os.path.join(HERE, "..", "data", "hardware", "tma", "tma_multicast_sm90.npz")


@pytest.mark.skipif(not os.path.exists(MULTICAST), reason="no recorded hardware data")
@pytest.mark.parametrize("mask", [0b1011, 0b0110, 0b1111])
def test_multicast_matches_hardware(mask):
    """hardware/tma/tma_multicast_probe.cu on an H200 (2026-11-21): a 4-CTA cluster,
    rank 1 issues one 64x16 uint16 128B-swizzled box load with .multicast::cluster ctaMask;
    each CTA expects the box bytes on its own mbarrier when its rank is in the mask. Recorded:
    every CTA's 4 KB of shared memory (prefilled 0xAB, box at 1024) and its phase-0 completion."""
    from ptxsim.machine.async_proxy import AsyncProxy
    from ptxsim.machine.mbarrier import Mbarriers
    from ptxsim.machine.memory import Memory
    from ptxsim.machine.tensormap import issue_tma_load
    rec = np.load(MULTICAST)
    hw = rec["out"][list(rec["masks"]).index(mask)].reshape(4, 4100)
    m = Memory(n_ctas=4, threads_per_cta=128, cluster_size=4, static_shared=4096 + 8)
    m.shared.data[:, :4096] = 0xAB
    A = (np.arange(64 * 16) + 1).astype(np.uint16).reshape(16, 64)
    tm = TensorMap.for_array(A, (64, 16), swizzle="128B").bind(m.global_)
    mb = Mbarriers(m.shared)
    mb.init([0, 1, 2, 3], 4096, 1)
    for r in range(4):
        mb.arrive(r, 4096, expect_tx=tm.box_bytes if mask >> r & 1 else 0)
    p = AsyncProxy()
    issue_tma_load(p, 128 + 0, tm, (0, 0), m, mb, cta=1, dst=1024, mbar=4096, cta_mask=mask)
    p.progress()
    for r in range(4):
        np.testing.assert_array_equal(m.shared.data[r, :4096], hw[r, :4096])
        assert bool(mb.try_wait_parity(r, 4096, 0)[0]) == bool(hw[r, 4096])
