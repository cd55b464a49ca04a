"""Warp-level fp8 mma on sm_90 (numerics kind "fp8_sync"), hand-derived.

The rule (measured: tests/data/hardware/mma_sync/mma_sync_sm90*.{npz,txt},
tests/data/hardware/mma_sp/mma_sp_sm90.npz):
ptxas turns each 32-element K chunk into F2FP (fp8 -> f16, exact), HMMA over the elements with
k % 4 in {0, 1} from a zero accumulator, HMMA over k % 4 in {2, 3} continuing from it (the sm_90
f16 fused model: F = 25, L = 16, RZ to f32 / RNE to f16), then FADD / HADD2 of C (round to
nearest).  Every expectation below is worked out in its comment from that rule; the last test
shows the values the previous model (FACTS §1 / MMA-Sim wgmma fp8: F = 13, E8M13) would give
differ.  Element bits from ml_dtypes (independent encoder).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ptxsim.errors import MmaTypeError
from ptxsim.numerics import backend, mma, params


@pytest.fixture(autouse=True, params=backend.available())
def numerics_backend(request):
    """Every test here runs under each numerics backend this installation has: "numpy"
    (fdpa.py, the specification) and, where built, "c" (the compiled _fdpa.c, the default);
    otherwise the numpy path would go untested here."""
    with backend.use(request.param):
        yield request.param


def e4m3(values):
    return np.asarray(values, np.float64).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)


def one_output(a_vals, b_vals, c_bits, dtype="f32", arch="sm_90", k=32):
    """D[0, 0] for A row a_vals, B column b_vals (zero-padded to k), C bits."""
    a = np.zeros((1, k), np.float64)
    b = np.zeros((k, 1), np.float64)
    a[0, :len(a_vals)] = a_vals
    b[:len(b_vals), 0] = b_vals
    c = np.array([[c_bits]], np.uint32 if dtype == "f32" else np.uint16)
    return int(mma(e4m3(a), e4m3(b), c, arch=arch, kind="fp8_sync", atype="e4m3",
                   btype="e4m3", ctype=dtype, dtype=dtype)[0, 0])


def test_c_is_added_with_round_to_nearest():
    # S = 1.5 * 1.0 = 1.5 (exact).  C = 2^24 (0x4B800000), whose f32 ulp is 2.  C + S =
    # 16777217.5 rounds to nearest: 16777218 = 0x4B800001.  (A fused RZ add would give 2^24.)
    assert one_output([1.5], [1.0], 0x4B800000) == 0x4B800001
    # C + 1.0 = 16777217 is a tie between 2^24 and 2^24 + 2: even -> 2^24
    assert one_output([1.0], [1.0], 0x4B800000) == 0x4B800000


def test_the_two_halves_are_chained_not_one_block():
    # k = 0, 1 (low half): 2^-9 * 2^-9 = 2^-18 twice (e4m3 subnormals, f16 normals);
    # k = 2, 3 (high half): 16 * 16 = 256 and 16 * -16 = -256.
    # Low HMMA: exact sum 2^-17.  High HMMA continues from it: emax = 8, grid 2^(8-25) = 2^-17,
    # so 2^-17 survives: S = 256 - 256 + 2^-17 = 2^-17 = 0x37000000; D = 0 + S.
    # One fused block of all 32 would truncate each 2^-18 on that grid: 0.
    t = 2.0 ** -9
    assert one_output([t, t, 16, 16], [t, t, 16, -16], 0) == 0x37000000
    # the same products with the halves swapped (k = 0, 1 <-> 2, 3): the first HMMA gives 0,
    # the second sums 2^-18 + 2^-18 alone (emax -18): S = 2^-17 again, the order is not visible
    # here, but moving one 2^-18 into the big half is: low {2^-18, 256}, high {2^-18, -256}:
    # low: emax 8, grid 2^-17, 2^-18 truncates -> 256; high: c = 256, 2^-18 truncates again,
    # 256 - 256 = 0 -> S = +0.
    assert one_output([t, 16, t, 16], [t, 16, t, -16], 0) == 0


def test_each_32_element_chunk_adds_c_separately():
    # K = 64: two chunks, each its own HMMA pair and FADD: D = (C +RN S1) +RN S2.
    # C = 2^24, S1 = S2 = 1.0: 2^24 + 1 ties to 2^24 (even), twice -> 2^24.  A single FADD of
    # S1 + S2 = 2 would give 2^24 + 2 = 0x4B800001.
    assert one_output([1.0] + [0] * 31 + [1.0], [1.0] + [0] * 31 + [1.0], 0x4B800000,
                      k=64) == 0x4B800000


def test_f16_d_rounds_in_the_hmma_and_in_hadd2():
    # .f16 D: HMMA.F16 (RNE to f16) then HADD2.  C = 2048 (0x6800, f16 ulp 2 there), S = 1.5:
    # 2049.5 -> 2050 = 0x6801.  S = 1.0: 2049 ties to even 2048.
    assert one_output([1.5], [1.0], 0x6800, dtype="f16") == 0x6801
    assert one_output([1.0], [1.0], 0x6800, dtype="f16") == 0x6800
    # HMMA.F16 rounds S itself to f16 first: S = 2048 + 1.5 (products 2048*1 and 1.5*1 in the
    # low half) -> 2049.5 -> 2050 in the HMMA; C = -2050 -> D = +0.
    assert one_output([128, 1.5], [16, 1.0], 0xE801, dtype="f16") == 0


def test_nan_and_inf():
    # e4m3 NaN (0x7F) -> f16 NaN -> HMMA NaN -> FADD: canonical 0x7FFFFFFF
    a = np.zeros((1, 32), np.uint8)
    a[0, 0] = 0x7F
    b = e4m3(np.ones((32, 1)))
    d = mma(a, b, np.zeros((1, 1), np.uint32), arch="sm_90", kind="fp8_sync", atype="e4m3",
            btype="e4m3", ctype="f32", dtype="f32")
    assert d[0, 0] == 0x7FFFFFFF
    # C = +Inf plus a finite S: +Inf; C = +Inf, S overflowing to -Inf in f16 HMMA: NaN 0x7FFF
    assert one_output([1.0], [1.0], 0x7F800000) == 0x7F800000
    assert one_output([448] * 32, [-448] * 32, 0x7C00, dtype="f16") == 0x7FFF


def test_profiles_per_architecture():
    # sm_90 and sm_100 (the same SASS expansion, hardware/matrix/stage.py sass_targets): the
    # emulated profile; sm_89 (native fp8 on Ada): MMA-Sim's Ada row (F = 13, E8M13, 16 bytes
    # per block); sm_120 (native in its SASS): its f8f6f4 row
    p90 = params("sm_90", "fp8_sync", "e4m3", "e4m3", "f32")
    assert p90.model == "emulated" and p90.inner.F == 25 and p90.inner.L == 16 and p90.chunk == 32
    assert params("sm_89", "fp8_sync", "e4m3", "e5m2", "f32") == \
        params("sm_89", "f8f6f4", "e4m3", "e5m2", "f32")
    assert params("sm_100", "fp8_sync", "e5m2", "e5m2", "f32").model == "emulated"
    assert params("sm_120", "fp8_sync", "e5m2", "e5m2", "f32") == \
        params("sm_120", "f8f6f4", "e5m2", "e5m2", "f32")
    with pytest.raises(MmaTypeError):          # no fp8 on sm_80
        mma(np.zeros((1, 32), np.uint8), np.zeros((32, 1), np.uint8),
            np.zeros((1, 1), np.uint32), arch="sm_80", kind="fp8_sync", atype="e4m3",
            btype="e4m3", ctype="f32", dtype="f32")
    with pytest.raises(MmaTypeError):          # mixed C/D types (ptxas rejects them)
        mma(np.zeros((1, 32), np.uint8), np.zeros((32, 1), np.uint8),
            np.zeros((1, 1), np.uint32), arch="sm_90", kind="fp8_sync", atype="e4m3",
            btype="e4m3", ctype="f32", dtype="f16")


def test_wgmma_fp8_row_is_unchanged_and_differs():
    # kind f8f6f4 on sm_90 stays MMA-Sim's Hopper wgmma fp8 model (F = 13, result kept to 13
    # fraction bits): C = 1 + 2^-20 (0x3F800008), S = 0 -> RZ to 13 bits gives 1.0; fp8_sync
    # returns C +RN 0 = C itself.
    z = np.zeros((1, 32), np.uint8)
    c = np.array([[0x3F800008]], np.uint32)
    kw = dict(arch="sm_90", atype="e4m3", btype="e4m3", ctype="f32", dtype="f32")
    assert mma(z, z.T.copy(), c, kind="f8f6f4", **kw)[0, 0] == 0x3F800000
    assert mma(z, z.T.copy(), c, kind="fp8_sync", **kw)[0, 0] == 0x3F800008
