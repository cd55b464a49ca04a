"""Tensor Memory state and tcgen05.alloc / dealloc / relinquish_alloc_permit (9.7.16.1, 9.7.16.7).

Expected values are from the spec text: address = lane << 16 | column (9.7.16.1.1); nCols a
power of two in [32, 512]; no alloc after relinquish; dealloc only of a previous allocation;
everything freed before exit; one .cta_group per kernel.
"""
import numpy as np
import pytest

from ptxsim.errors import (CtaGroupMismatch, TmemAccessError, TmemAllocBlocked, TmemAllocError,
                           TmemLeakError, UndefinedBehavior)
from ptxsim.isa.tmem import (CtaPair, TensorMemory, split_address, tmem_address,
                             warp_lane_range)


def test_address_format():
    # 9.7.16.1.1: bits 31-16 lane, 15-0 column
    assert tmem_address(0, 0) == 0
    assert tmem_address(1, 0) == 0x10000
    assert tmem_address(127, 511) == 0x7F01FF
    assert split_address(0x7F01FF) == (127, 511)
    lanes, cols = split_address(np.array([0x10002, 0x200010], np.uint32))
    assert list(lanes) == [1, 32] and list(cols) == [2, 16]


def test_lane_quarters():
    # 9.7.16.8.1 table
    assert [warp_lane_range(w) for w in range(4)] == [(0, 32), (32, 64), (64, 96), (96, 128)]
    assert warp_lane_range(5) == (32, 64)


def test_state_shape():
    t = TensorMemory()
    assert t.cells.shape == (128, 512) and t.cells.dtype == np.uint32
    with pytest.raises(TmemAccessError):
        TensorMemory(cells=np.zeros((128, 256), np.uint32))


@pytest.mark.parametrize("n", [0, 16, 31, 48, 96, 100, 1024, -32])
def test_illegal_ncols(n):
    with pytest.raises(TmemAllocError, match="power of two"):
        TensorMemory().alloc(n)


@pytest.mark.parametrize("n", [32, 64, 128, 256, 512])
def test_legal_ncols_and_address_written_to_smem(n):
    t = TensorMemory()
    smem = np.zeros(64, np.uint8)
    a = t.alloc(n, smem=smem, dst=8)
    assert split_address(a) == (0, 0)
    assert smem[8:12].view("<u4")[0] == a
    assert t.allocated_mask.sum() == n


def test_allocations_do_not_overlap_and_exhaust():
    t = TensorMemory()
    addrs = [t.alloc(128) for _ in range(4)]
    cols = sorted(split_address(a)[1] for a in addrs)
    assert cols == [0, 128, 256, 384]
    assert t.try_alloc(32) is None
    with pytest.raises(TmemAllocBlocked, match="blocks"):
        t.alloc(32)
    t.dealloc(addrs[1], 128)
    a = t.alloc(64)
    assert split_address(a)[1] in range(128, 256)


def test_ncols_must_not_increase():
    t = TensorMemory()
    t.alloc(64)
    t.alloc(64)
    t.alloc(32)
    with pytest.raises(TmemAllocError, match="should not\\s+increase"):
        t.alloc(64)


def test_alloc_after_relinquish():
    t = TensorMemory()
    a = t.alloc(32)
    t.relinquish_alloc_permit()
    with pytest.raises(TmemAllocError, match="relinquish"):
        t.alloc(32)
    t.dealloc(a, 32)         # dealloc remains legal
    t.check_exit()


def test_double_free_foreign_and_mismatch():
    t = TensorMemory()
    a = t.alloc(64)
    with pytest.raises(TmemAllocError, match="has 64 columns"):
        t.dealloc(a, 32)
    with pytest.raises(TmemAllocError, match="not the start"):
        t.dealloc(tmem_address(0, 256), 64)
    with pytest.raises(TmemAllocError, match="lane"):
        t.dealloc(tmem_address(32, 0), 64)
    t.dealloc(a, 64)
    with pytest.raises(TmemAllocError, match="double free"):
        t.dealloc(a, 64)


def test_leak_at_exit_is_reported():
    t = TensorMemory(cta_rank=3)
    t.alloc(64)
    b = t.alloc(32)
    t.dealloc(b, 32)
    with pytest.raises(TmemLeakError) as e:
        t.check_exit()
    assert e.value.leaks == [(0, 64)] and e.value.cta == 3
    assert "columns [0, 64)" in str(e.value)


def test_warp_disagreeing_on_ncols_is_undefined():
    n = np.full(32, 64)
    n[5] = 32
    with pytest.raises(UndefinedBehavior):
        TensorMemory().alloc(n)
    assert split_address(TensorMemory().alloc(np.full(32, 64)))[1] == 0


def test_smem_destination_checked():
    with pytest.raises(TmemAllocError, match="aligned"):
        TensorMemory().alloc(32, smem=np.zeros(16, np.uint8), dst=2)
    with pytest.raises(TmemAllocError, match="inside"):
        TensorMemory().alloc(32, smem=np.zeros(16, np.uint8), dst=16)


def test_mixing_cta_groups_is_an_error():
    t = TensorMemory()
    t.alloc(32)
    with pytest.raises(CtaGroupMismatch, match="same .cta_group"):
        t.relinquish_alloc_permit(cta_group=2)


def test_cta_pair_alloc_dealloc():
    p = CtaPair()
    p.odd.alloc  # both exist
    smem = (np.zeros(8, np.uint8), np.zeros(8, np.uint8))
    a = p.alloc(128, smem=smem, dst=4)
    b = p.alloc(64)
    assert split_address(a) == (0, 0) and split_address(b) == (0, 128)
    for s in smem:
        assert s[4:8].view("<u4")[0] == a
    for t in p.ctas:
        assert t.allocated_mask.sum() == 192 and t.cta_group == 2
    p.dealloc(b, 64)
    with pytest.raises(TmemAllocError, match="double free"):
        p.dealloc(b, 64)
    with pytest.raises(TmemLeakError):
        p.check_exit()
    p.dealloc(a, 128)
    p.relinquish_alloc_permit()
    with pytest.raises(TmemAllocError, match="relinquish"):
        p.alloc(32)
    p.check_exit()


def test_cta_pair_needs_columns_free_in_both():
    p = CtaPair()
    p.even._use_cta_group(2, "test")
    p.even.allocations[0] = 256        # a (hypothetical) prior pair allocation seen in one CTA
    a = p.alloc(256)
    assert split_address(a)[1] == 256
    with pytest.raises(TmemAllocBlocked):
        p.alloc(256)


def test_cta_pair_with_exited_peer_is_undefined():
    p = CtaPair()
    p.odd_exited = True
    with pytest.raises(UndefinedBehavior, match="peer"):
        p.alloc(32)
