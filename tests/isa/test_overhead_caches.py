"""The memoised per-instruction work (docs/performance.md, issue 10) must not go stale or hide
errors: cached gather plans follow the shared-memory *contents*, an illegal descriptor or
instruction raises on every call, and cached arrays cannot be corrupted by a caller."""
import numpy as np
import pytest

from ptxsim.errors import LayoutError, PtxsimError
from ptxsim.isa.descriptors import InstrDescriptor
from ptxsim.isa.smem_layout import _gather_plan, canonical_descriptor, matrix_to_smem, smem_to_matrix
from ptxsim.isa.tcgen05_mma import Tcgen05Mma, _d_cells, check_instruction
from ptxsim.isa.datapath import datapath_layout


def test_cached_plan_reads_current_contents():
    rng = np.random.default_rng(1)
    desc = canonical_descriptor("bf16", 16, 16, "K", "128B")
    smem = np.zeros(8192, np.uint8)
    for _ in range(3):          # same descriptor, new data each time: the read follows the data
        m = rng.integers(0, 1 << 16, (16, 16)).astype(np.uint16)
        matrix_to_smem(m, smem, desc, "bf16", "K")
        np.testing.assert_array_equal(smem_to_matrix(smem, desc, "bf16", 16, 16, "K"), m)


def test_out_of_range_read_raises_every_time_after_a_legal_one():
    desc = canonical_descriptor("bf16", 16, 16, "K", "none")
    smem_to_matrix(np.zeros(4096, np.uint8), desc, "bf16", 16, 16, "K")
    for _ in range(2):          # 16x16 bf16 = 512 bytes do not fit in 64 bytes
        with pytest.raises(LayoutError):
            smem_to_matrix(np.zeros(64, np.uint8), desc, "bf16", 16, 16, "K")


def test_cached_arrays_are_read_only():
    desc = canonical_descriptor("bf16", 16, 16, "K", "none")
    idx, shift, _, _, elem = _gather_plan(desc, "bf16", None, 16, 16, "K", 4096)
    lanes, cols, block = _d_cells(datapath_layout(128, 1, False, False), 0, 128, 64, 0, 32)
    for a in (idx, shift, elem, lanes, cols):
        assert not a.flags.writeable
    # layout D (M = 128, 9.7.16.10.5): row m in lane m, column n at the D address column + n
    assert block == (slice(0, 128), slice(32, 96))
    assert lanes[5, 7] == 5 and cols[5, 7] == 39


def test_illegal_instruction_raises_every_time_after_a_legal_one():
    mma = Tcgen05Mma(kind="f16")
    ok = InstrDescriptor.make("f16", m=128, n=256, atype="bf16", btype="bf16").encode()
    d1, _ = check_instruction(mma, ok)
    d2, _ = check_instruction(mma, ok)
    assert (d1.m, d1.n) == (128, 256) and d2 == d1
    for _ in range(2):          # A bf16 with B f16: no such .kind::f16 combination (Table 42)
        bad = InstrDescriptor.make("f16", m=128, n=256, atype="bf16", btype="f16").encode()
        with pytest.raises(PtxsimError):
            check_instruction(mma, bad)
    for _ in range(2):          # the instruction descriptor is a 32-bit register
        with pytest.raises(PtxsimError):
            check_instruction(mma, 1 << 32)


def test_memoised_decoders_equal_the_uncached_ones_and_refuse_bad_values_every_time():
    from ptxsim.errors import DescriptorError, OperandError
    from ptxsim.isa.descriptors import SmemDescriptor
    from ptxsim.isa.smem_layout import smem_packing
    from ptxsim.isa.tcgen05_mma import _from_opcode, _smem_descriptor
    d = canonical_descriptor("bf16", 128, 16, "K", "128B", start=4096)
    raw = d.encode()
    for v in (raw, np.uint64(raw), raw):           # numpy or Python int: one descriptor
        assert _smem_descriptor(v) == SmemDescriptor.decode(raw) == d
    for _ in range(2):
        with pytest.raises(DescriptorError):
            _smem_descriptor(1 << 64)                 # a descriptor is 64 bits (Table 40)
    op = "tcgen05.mma.cta_group::1.kind::f16.collector::a::fill"
    for flags in ((), (("a_tmem", True),), ()):
        assert _from_opcode(op, flags) == Tcgen05Mma.from_opcode(op, **dict(flags))
    assert _from_opcode(op, (("a_tmem", True),)).a_tmem and not _from_opcode(op, ()).a_tmem
    for _ in range(2):
        with pytest.raises(OperandError):
            _from_opcode("tcgen05.mma.cta_group::1.kind::f16.bogus", ())
    assert smem_packing("e2m1", "mxf4").bits == 4 and smem_packing("bf16").bits == 16
    for _ in range(2):
        with pytest.raises(PtxsimError):
            smem_packing("no_such_format")
