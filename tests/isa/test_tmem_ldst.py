"""tcgen05.ld / st / ld.red / wait: fragment placement and access rules.

Expected placements come from two sources independent of the code under test:
1. CuTe's copy traits (NVIDIA CUTLASS include/cute/atom/copy_traits_sm100.hpp at commit
   7107b05535f8977f5ecb9d01ee203205b1fd9bc4, SM100_TMEM_LOAD_<shape><num>x): the DstLayout
   (thread, value-bit) -> bit and the TMEM row width of the ValID, transcribed below as data and
   evaluated by a ten-line CuTe-layout evaluator in this file.
2. FACTS.md section 4 text formulas, written out by hand in `facts_position`.
"""
import numpy as np
import pytest

from ptxsim.errors import OperandError, SpecDeviationWarning, TmemAccessError, UndefinedBehavior
from ptxsim.isa.tmem import TensorMemory, tmem_address
from ptxsim.isa.tmem_ldst import (fragment_map, legal_nums, num_registers,
                                  tcgen05_ld, tcgen05_ld_red, tcgen05_st, tcgen05_wait)

# (shape, num) -> (bits per lane in the TMEM atom, DstLayout shape, DstLayout stride)
CUTE_DST = {
    ("16x256b", 1): (256, ((4, 8), (64, 2)), ((64, 256), (1, 2048))),
    ("16x256b", 2): (512, ((4, 8), (64, 2, 2)), ((64, 512), (1, 4096, 256))),
    ("16x256b", 4): (1024, ((4, 8), (64, 2, 4)), ((64, 1024), (1, 8192, 256))),
    ("16x256b", 8): (2048, ((4, 8), (64, 2, 8)), ((64, 2048), (1, 16384, 256))),
    ("16x256b", 16): (4096, ((4, 8), (64, 2, 16)), ((64, 4096), (1, 32768, 256))),
    ("16x256b", 32): (8192, ((4, 8), (64, 2, 32)), ((64, 8192), (1, 65536, 256))),
    ("16x128b", 1): (128, ((4, 8), (32, 2)), ((32, 128), (1, 1024))),
    ("16x128b", 2): (256, ((4, 8), (32, 2, 2)), ((32, 256), (1, 2048, 128))),
    ("16x128b", 4): (512, ((4, 8), (32, 2, 4)), ((32, 512), (1, 4096, 128))),
    ("16x128b", 8): (1024, ((4, 8), (32, 2, 8)), ((32, 1024), (1, 8192, 128))),
    ("16x128b", 16): (2048, ((4, 8), (32, 2, 16)), ((32, 2048), (1, 16384, 128))),
    ("16x128b", 32): (4096, ((4, 8), (32, 2, 32)), ((32, 4096), (1, 32768, 128))),
    ("16x128b", 64): (8192, ((4, 8), (32, 2, 64)), ((32, 8192), (1, 65536, 128))),
    ("16x64b", 1): (64, ((2, 2, 8), 32), ((512, 32, 64), 1)),
    ("16x64b", 2): (128, ((2, 2, 8), (32, 2)), ((1024, 32, 128), (1, 64))),
    ("16x64b", 4): (256, ((2, 2, 8), (32, 4)), ((2048, 32, 256), (1, 64))),
    ("16x64b", 8): (512, ((2, 2, 8), (32, 8)), ((4096, 32, 512), (1, 64))),
    ("16x64b", 16): (1024, ((2, 2, 8), (32, 16)), ((8192, 32, 1024), (1, 64))),
    ("16x64b", 32): (2048, ((2, 2, 8), (32, 32)), ((16384, 32, 2048), (1, 64))),
    ("16x64b", 64): (4096, ((2, 2, 8), (32, 64)), ((32768, 32, 4096), (1, 64))),
    ("16x64b", 128): (8192, ((2, 2, 8), (32, 128)), ((65536, 32, 8192), (1, 64))),
    ("16x32bx2", 1): (64, ((16, 2), 32), ((64, 32), 1)),
    ("16x32bx2", 2): (128, ((16, 2), 64), ((128, 64), 1)),
    ("16x32bx2", 4): (256, ((16, 2), 128), ((256, 128), 1)),
    ("16x32bx2", 8): (512, ((16, 2), 256), ((512, 256), 1)),
    ("16x32bx2", 16): (1024, ((16, 2), 512), ((1024, 512), 1)),
    ("16x32bx2", 32): (2048, ((16, 2), 1024), ((2048, 1024), 1)),
    ("16x32bx2", 64): (4096, ((16, 2), 2048), ((4096, 2048), 1)),
    ("16x32bx2", 128): (8192, ((16, 2), 4096), ((8192, 4096), 1)),
    ("32x32b", 1): (32, (32, 32), (32, 1)),
    ("32x32b", 2): (64, (32, 64), (64, 1)),
    ("32x32b", 4): (128, (32, 128), (128, 1)),
    ("32x32b", 8): (256, (32, 256), (256, 1)),
    ("32x32b", 16): (512, (32, 512), (512, 1)),
    ("32x32b", 32): (1024, (32, 1024), (1024, 1)),
    ("32x32b", 64): (2048, (32, 2048), (2048, 1)),
    ("32x32b", 128): (4096, (32, 4096), (4096, 1)),
}

ALL = sorted(CUTE_DST)   # every legal (shape, num) of Table 47 -- 37 combinations


def cute_eval(shape, stride, idx):
    """Offset of the idx-th coordinate (colexicographic) of a CuTe layout."""
    if isinstance(shape, int):
        return idx * stride
    off = 0
    for s, d in zip(shape, stride):
        size = int(np.prod(np.array(_flat(s))))
        off += cute_eval(s, d, idx % size)
        idx //= size
    return off


def _flat(s):
    return [s] if isinstance(s, int) else [x for y in s for x in _flat(y)]


def cute_position(shape, num, t, j, b=0):
    """(lane, column, bit) of bit b of register j of thread t, per CuTe (split offset = num)."""
    row_bits, (tshape, vshape), (tstride, vstride) = CUTE_DST[(shape, num)]
    bit = cute_eval(tshape, tstride, t) + cute_eval(vshape, vstride, 32 * j + b)
    return bit // row_bits, (bit % row_bits) // 32, bit % 32


def facts_position(shape, t, j):
    """FACTS.md section 4, written out: (lane, column) for .x1..xN (column before any split)."""
    if shape == "32x32b":
        return t, j
    if shape == "16x128b":   # r0 (t/4, t%4), r1 (t/4+8, t%4), +4 columns per repeat
        return t // 4 + 8 * (j % 2), t % 4 + 4 * (j // 2)
    if shape == "16x256b":   # r0,r1 (t/4, 2(t%4)+{0,1}), r2,r3 (+8 lanes), +8 columns per repeat
        return t // 4 + 8 * ((j % 4) // 2), 2 * (t % 4) + (j % 2) + 8 * (j // 4)
    if shape == "16x32bx2":  # t<16 lane t; t>=16 lane t-16 (column offset added separately)
        return t % 16, j
    return None              # .16x64b: FACTS defers to CuTe


@pytest.mark.parametrize("shape,num", ALL)
def test_fragment_map_matches_cute_and_facts(shape, num):
    f = fragment_map(shape, num)
    assert f.nregs == num_registers(shape, num)
    for t in range(32):
        for j in range(f.nregs):
            lane, col, bit0 = cute_position(shape, num, t, j)
            assert bit0 == 0
            # all 32 bits of the register sit in one cell, in order
            assert cute_position(shape, num, t, j, 31) == (lane, col, 31)
            got_col = f.column[t, j] + (num if f.second_half[t, j] else 0)
            assert (f.lane[t, j], got_col) == (lane, col), (t, j)
            fp = facts_position(shape, t, j)
            if fp is not None:
                assert (f.lane[t, j], f.column[t, j]) == fp


def test_table47_register_counts_and_legal_nums():
    # Table 47, transcribed
    table = {"x1": (1, 2, 4), "x2": (2, 4, 8), "x4": (4, 8, 16), "x8": (8, 16, 32),
             "x16": (16, 32, 64), "x32": (32, 64, 128), "x64": (64, 128, None),
             "x128": (128, None, None)}
    for num_s, (small, s128, s256) in table.items():
        n = int(num_s[1:])
        for shape in ("16x32bx2", "16x64b", "32x32b"):
            assert num_registers(shape, n) == small
        for shape, want in (("16x128b", s128), ("16x256b", s256)):
            if want is None:
                with pytest.raises(OperandError):
                    num_registers(shape, n)
            else:
                assert num_registers(shape, n) == want
    assert legal_nums("16x256b") == (1, 2, 4, 8, 16, 32)
    with pytest.raises(OperandError):
        num_registers("32x32b", 3)
    with pytest.raises(OperandError):
        num_registers("8x32b", 1)


def _full_tmem():
    t = TensorMemory()
    t.alloc(512)
    return t


def _expected_cells(shape, num, pack, base_lane, base_col):
    """Per CuTe: for each (t, j[, half]) the absolute (lane, column) it touches."""
    R = num_registers(shape, num)
    out = {}
    for t in range(32):
        for j in range(R):
            lane, col, _ = cute_position(shape, num, t, j)
            if shape == "16x32bx2" and t >= 16:
                col -= num           # CuTe's split offset is num; re-add the test's own below
                col_split = SPLIT
            else:
                col_split = 0
            if pack:   # 9.7.16.8.2 / FACTS: register halves <- low 16 bits of columns 2c, 2c+1
                out[(t, j, 0)] = (base_lane + lane, base_col + 2 * col + col_split)
                out[(t, j, 1)] = (base_lane + lane, base_col + 2 * col + 1 + col_split)
            else:
                out[(t, j)] = (base_lane + lane, base_col + col + col_split)
    return out


SPLIT = 256


@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("shape,num", ALL)
def test_st_then_every_cell_is_where_cute_puts_it(shape, num, pack):
    R = num_registers(shape, num)
    width = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8, "16x32bx2": 1}[shape] * num
    if (2 if pack else 1) * width + (SPLIT if shape == "16x32bx2" else 0) > 512:
        pytest.skip("does not fit in 512 columns from column 0")
    warp = 2
    base_lane = 64 + (16 if shape.startswith("16x") else 0)
    tm = _full_tmem()
    split = SPLIT if shape == "16x32bx2" else None
    taddr = tmem_address(base_lane, 0)
    ids = (np.arange(32 * R, dtype=np.uint32).reshape(32, R) * 2654435761 + 12345).astype(np.uint32)
    tcgen05_st(tm, shape, num, taddr, ids, warp_ids=[warp], unpack=pack, split=split)
    expect = np.zeros((128, 512), np.uint32)
    for key, (lane, col) in _expected_cells(shape, num, pack, base_lane, 0).items():
        v = int(ids[key[0], key[1]])
        expect[lane, col] = (v >> (16 * key[2])) & 0xFFFF if pack else v
    np.testing.assert_array_equal(tm.cells, expect)
    # and back: ld of what st wrote returns the registers (pack: both halves)
    back = tcgen05_ld(tm, shape, num, taddr, warp_ids=[warp], pack=pack, split=split)
    np.testing.assert_array_equal(back, ids)


@pytest.mark.parametrize("pack", [False, True])
@pytest.mark.parametrize("shape", ["32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2"])
def test_one_hot_bits_land_in_the_right_cell_and_bit(shape, pack):
    """Every register bit of every thread, stored alone, lands exactly at one (lane, col, bit)."""
    num = 2
    R = num_registers(shape, num)
    split = 16 if shape == "16x32bx2" else None
    exp = _expected_cells(shape, num, pack, 0, 0)
    tm = TensorMemory(strict=False)
    for t in range(32):
        for j in range(R):
            for b in (0, 7, 15, 16, 23, 31):
                regs = np.zeros((32, R), np.uint32)
                regs[t, j] = np.uint32(1) << np.uint32(b)
                tm.cells[:] = 0
                tcgen05_st(tm, shape, num, 0, regs, warp_ids=[0], unpack=pack, split=split)
                nz = np.argwhere(tm.cells)
                assert len(nz) == 1
                lane, col = nz[0]
                if pack:
                    el, ec = exp[(t, j, b // 16)]
                    want_bit = b % 16
                else:
                    el, ec = exp[(t, j)]
                    want_bit = b
                if shape == "16x32bx2" and t >= 16:
                    ec += split - SPLIT
                assert (lane, col) == (el, ec)
                assert tm.cells[lane, col] == 1 << want_bit
                got = tcgen05_ld(tm, shape, num, 0, warp_ids=[0], pack=pack, split=split)
                assert np.count_nonzero(got) == 1 and got[t, j] == regs[t, j]


def test_ld_pack_ignores_upper_halves_and_st_unpack_zeroes_them():
    tm = TensorMemory(strict=False)
    tm.cells[0, 0], tm.cells[0, 1] = 0xAAAA1234, 0xBBBB5678
    r = tcgen05_ld(tm, "32x32b", 1, 0, [0], pack=True)
    assert r[0, 0] == 0x56781234
    regs = np.zeros((32, 1), np.uint32)
    regs[0, 0] = 0xCAFEBEEF
    tcgen05_st(tm, "32x32b", 1, 0, regs, [0], unpack=True)
    assert tm.cells[0, 0] == 0xBEEF and tm.cells[0, 1] == 0xCAFE


def test_four_warps_cover_all_lanes_vectorised():
    tm = _full_tmem()
    tm.cells[:] = np.arange(128 * 512, dtype=np.uint32).reshape(128, 512)
    taddr = np.repeat(tmem_address(32 * np.arange(4), 5), 32)      # per thread
    r = tcgen05_ld(tm, "32x32b", 4, taddr, warp_ids=[0, 1, 2, 3])
    assert r.shape == (128, 4)
    lane = np.arange(128)[:, None]
    np.testing.assert_array_equal(r, lane * 512 + 5 + np.arange(4)[None, :])
    # warp ids 4..7 (second warpgroup) reach the same quarters
    r2 = tcgen05_ld(tm, "32x32b", 4, taddr, warp_ids=[4, 5, 6, 7])
    np.testing.assert_array_equal(r, r2)


@pytest.mark.parametrize("shape,lane", [("32x32b", 1), ("16x128b", 20), ("16x64b", 24)])
def test_warp_outside_its_lane_quarter_is_named(shape, lane):
    tm = _full_tmem()
    with pytest.raises(TmemAccessError) as e:
        tcgen05_ld(tm, shape, 1, tmem_address(lane, 8), warp_ids=[0])
    assert e.value.warp == 0 and e.value.lane is not None and e.value.lane >= 32
    assert e.value.column is not None


def test_warp_1_naming_lane_0_reads_its_own_quarter_with_a_warning():
    # undefined in the PTX ISA (9.7.16.8.1), but DeepGEMM's sm100 epilogues do it from every
    # warp of a warpgroup and are correct on B200: the hardware takes the quarter from the warp
    tm = _full_tmem()
    tm.cells[:] = np.arange(128 * 512, dtype=np.uint32).reshape(128, 512)
    with pytest.warns(SpecDeviationWarning, match="own quarter"):
        r = tcgen05_ld(tm, "32x32b", 2, tmem_address(0, 7), warp_ids=[1])
    np.testing.assert_array_equal(r, (32 + np.arange(32))[:, None] * 512 + 7 + np.arange(2))


def test_an_access_across_a_quarter_boundary_is_still_named():
    tm = _full_tmem()
    with pytest.raises(TmemAccessError) as e:
        tcgen05_ld(tm, "32x32b", 1, tmem_address(16, 0), warp_ids=[1])
    assert e.value.warp == 1


def test_16_lane_shapes_may_use_the_upper_half_of_a_quarter():
    tm = _full_tmem()
    tm.cells[48, 3] = 7
    r = tcgen05_ld(tm, "16x32bx2", 1, tmem_address(48, 3), warp_ids=[1], split=1)
    assert r[0, 0] == 7


def test_threads_with_different_taddr_are_undefined():
    tm = _full_tmem()
    taddr = np.zeros(32, np.uint32)
    taddr[17] = 4
    with pytest.raises(UndefinedBehavior, match="warp 0"):
        tcgen05_ld(tm, "32x32b", 1, taddr)
    with pytest.raises(UndefinedBehavior):
        tcgen05_st(tm, "32x32b", 1, taddr, np.zeros((32, 1), np.uint32))


def test_unallocated_and_out_of_range_columns():
    tm = TensorMemory()
    tm.alloc(32)
    with pytest.raises(TmemAccessError, match="not allocated") as e:
        tcgen05_ld(tm, "32x32b", 2, 31)
    assert e.value.column == 32
    tm2 = TensorMemory(strict=False)
    with pytest.raises(TmemAccessError) as e:
        tcgen05_ld(tm2, "32x32b", 4, 510)
    assert e.value.column == 512


def test_split_offset_rules():
    tm = _full_tmem()
    with pytest.raises(OperandError, match="immHalfSplitoff"):
        tcgen05_ld(tm, "16x32bx2", 1, 0)
    with pytest.raises(OperandError, match="only allowed"):
        tcgen05_ld(tm, "32x32b", 1, 0, split=4)


def test_st_register_shape_checked():
    tm = _full_tmem()
    with pytest.raises(OperandError, match="Table 48"):
        tcgen05_st(tm, "16x256b", 1, 0, np.zeros((32, 3), np.uint32))


def test_two_warps_of_one_quarter_racing_is_undefined():
    tm = _full_tmem()
    regs = np.zeros((64, 1), np.uint32)
    regs[32:] = 1
    with pytest.raises(UndefinedBehavior, match="two warps"):
        tcgen05_st(tm, "32x32b", 1, 0, regs, warp_ids=[0, 4])
    tcgen05_st(tm, "32x32b", 1, 0, np.zeros((64, 1), np.uint32), warp_ids=[0, 4])  # same bits: ok


# ---- tcgen05.ld.red -------------------------------------------------------------------------

def _f32(x):
    return np.array(x, np.float32).view(np.uint32)


def test_ld_red_u32_s32():
    tm = _full_tmem()
    tm.cells[0, :4] = [5, 0xFFFFFFFF, 3, 9]
    regs, red = tcgen05_ld_red(tm, "32x32b", 4, "min", "u32", 0)
    assert red[0] == 3 and list(regs[0]) == [5, 0xFFFFFFFF, 3, 9]
    _, red = tcgen05_ld_red(tm, "32x32b", 4, "max", "u32", 0)
    assert red[0] == 0xFFFFFFFF
    _, red = tcgen05_ld_red(tm, "32x32b", 4, "min", "s32", 0)
    assert red[0] == 0xFFFFFFFF          # -1
    _, red = tcgen05_ld_red(tm, "32x32b", 4, "max", "s32", 0)
    assert red[0] == 9


def test_ld_red_f32_signed_zero_abs_and_nan():
    tm = _full_tmem()
    tm.cells[0, :4] = _f32([0.0, -0.0, 2.5, -7.0])
    _, red = tcgen05_ld_red(tm, "32x32b", 4, "min", "f32", 0)
    assert red[0] == _f32(-7.0)
    _, red = tcgen05_ld_red(tm, "32x32b", 4, "max", "f32", 0)
    assert red[0] == _f32(2.5)
    _, red = tcgen05_ld_red(tm, "32x32b", 4, "max", "f32", 0, abs=True)
    assert red[0] == _f32(7.0)
    _, red = tcgen05_ld_red(tm, "32x32b", 4, "min", "f32", 0, abs=True)
    assert red[0] == _f32(0.0)
    tm.cells[1, :2] = _f32([0.0, -0.0])          # -0 < +0
    _, red = tcgen05_ld_red(tm, "32x32b", 2, "min", "f32", 0)
    assert red[1] == 0x80000000
    _, red = tcgen05_ld_red(tm, "32x32b", 2, "max", "f32", 0)
    assert red[1] == 0x00000000
    tm.cells[2, :2] = [0x7FC00001, _f32(1.5)]    # NaN ignored without .NaN
    _, red = tcgen05_ld_red(tm, "32x32b", 2, "min", "f32", 0)
    assert red[2] == _f32(1.5)
    _, red = tcgen05_ld_red(tm, "32x32b", 2, "min", "f32", 0, nan=True)
    assert red[2] == 0x7FFFFFFF
    tm.cells[3, :2] = [0xFFC00000, 0x7F800001]   # all NaN -> canonical NaN
    _, red = tcgen05_ld_red(tm, "32x32b", 2, "max", "f32", 0)
    assert red[3] == 0x7FFFFFFF
    tm.cells[4, :2] = _f32([np.inf, -np.inf])
    _, red = tcgen05_ld_red(tm, "32x32b", 2, "min", "f32", 0)
    assert red[4] == _f32(-np.inf)


def test_ld_red_16x32bx2_per_thread():
    tm = _full_tmem()
    tm.cells[3, 0:2] = [4, 8]
    tm.cells[3, 10:12] = [1, 2]
    _, red = tcgen05_ld_red(tm, "16x32bx2", 2, "max", "u32", 0, split=10)
    assert red[3] == 8 and red[19] == 2


@pytest.mark.parametrize("kw,msg", [
    (dict(shape="16x64b", num=2, op="min", dtype="u32"), "shape"),
    (dict(shape="32x32b", num=1, op="min", dtype="u32"), "at least"),
    (dict(shape="32x32b", num=2, op="add", dtype="u32"), "min or"),
    (dict(shape="32x32b", num=2, op="min", dtype="f16"), "type"),
    (dict(shape="32x32b", num=2, op="min", dtype="u32", abs=True), "only for"),
])
def test_ld_red_legality(kw, msg):
    tm = _full_tmem()
    with pytest.raises(OperandError, match=msg):
        tcgen05_ld_red(tm, taddr=0, **kw)


def test_wait_kinds():
    tcgen05_wait("ld")
    tcgen05_wait("st")
    with pytest.raises(OperandError):
        tcgen05_wait("mma")


def test_cli_layout_tmem(capsys):
    from ptxsim.cli import main
    assert main(["layout", "tmem", "--shape", "16x256b", "--num", "x2"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # FACTS: .16x256b T1 r0 -> lane 0, column 2; T0 r2 -> lane 8, column 0; repeat +8 columns
    row0 = lines[2].split()
    assert row0[0] == "0" and row0[1 + 2] == "T1.r0" and row0[1 + 8] == "T0.r4"
    row8 = lines[2 + 8].split()
    assert row8[1] == "T0.r2"
    assert main(["layout", "tmem", "--shape", "16x64b", "--num", "x1", "--list"]) == 0
    out = capsys.readouterr().out
    assert "T1  r0   -> lane   8  column   0" in out


# A third source, independent of CuTe: Triton's linear layouts of the .x1 messages
# (triton-lang/triton lib/Dialect/TritonNvidiaGPU/IR/Dialect.cpp, getTileLayout; commit
# 9c3434b30044b60341290c17859541593df92084). Each input bit of the thread id (lane) and of the
# register index maps to a (row, column) basis vector; a position is the XOR of the bases of
# the set bits.
TRITON_BASES = {
    "32x32b": {"lane": [(1, 0), (2, 0), (4, 0), (8, 0), (16, 0)], "reg": []},
    "16x32bx2": {"lane": [(1, 0), (2, 0), (4, 0), (8, 0)], "reg": []},   # lanes 0-15
    "16x64b": {"lane": [(8, 0), (0, 1), (1, 0), (2, 0), (4, 0)], "reg": []},
    "16x128b": {"lane": [(0, 1), (0, 2), (1, 0), (2, 0), (4, 0)], "reg": [(8, 0)]},
    "16x256b": {"lane": [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)], "reg": [(0, 1), (8, 0)]},
}


@pytest.mark.parametrize("shape", sorted(TRITON_BASES))
def test_x1_fragments_match_triton_linear_layouts(shape):
    b = TRITON_BASES[shape]
    f = fragment_map(shape, 1)
    nthreads = 1 << len(b["lane"])
    for t in range(nthreads):
        for j in range(1 << len(b["reg"])):
            row = col = 0
            for bit, (r, c) in enumerate(b["lane"]):
                if t >> bit & 1:
                    row, col = row ^ r, col ^ c
            for bit, (r, c) in enumerate(b["reg"]):
                if j >> bit & 1:
                    row, col = row ^ r, col ^ c
            assert (f.lane[t, j], f.column[t, j]) == (row, col), (t, j)


def test_per_warp_taddr_without_warp_ids():
    tm = _full_tmem()
    tm.cells[32, 7] = 99
    r = tcgen05_ld(tm, "32x32b", 1, np.array([tmem_address(0, 7), tmem_address(32, 7)]))
    assert r.shape == (64, 1) and r[32, 0] == 99


def test_cli_layout_tmem_illegal_num(capsys):
    from ptxsim.cli import main
    assert main(["layout", "tmem", "--shape", "16x256b", "--num", "x64"]) == 1
    assert "Table 47" in capsys.readouterr().err


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(shape=st.sampled_from(["32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2"]),
       lognum=st.integers(0, 3), pack=st.booleans(), half=st.integers(0, 1),
       col=st.integers(0, 200), warps=st.lists(st.integers(0, 15), min_size=1, max_size=4,
                                               unique_by=lambda w: w % 4),
       seed=st.integers(0, 2**32 - 1))
def test_st_ld_round_trip_many_warps(shape, lognum, pack, half, col, warps, seed):
    """Stores by several warps at once land in disjoint cells and load back unchanged; only
    the cells the fragment map names change."""
    num = 1 << lognum
    R = num_registers(shape, num)
    lane_in_quarter = 16 * half if shape != "32x32b" else 0
    taddr = np.array([tmem_address(32 * (w % 4) + lane_in_quarter, col) for w in warps])
    regs = np.random.default_rng(seed).integers(0, 2**32, (32 * len(warps), R), dtype=np.uint32)
    tm = TensorMemory(strict=False)
    split = 32 if shape == "16x32bx2" else None
    tcgen05_st(tm, shape, num, taddr, regs, warp_ids=warps, unpack=pack, split=split)
    back = tcgen05_ld(tm, shape, num, taddr, warp_ids=warps, pack=pack, split=split)
    np.testing.assert_array_equal(back, regs)
    touched = np.count_nonzero(tm.cells != 0)
    assert touched <= 32 * len(warps) * R * (2 if pack else 1)
