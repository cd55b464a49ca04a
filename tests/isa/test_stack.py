"""Stack instructions (9.7.17): effects and errors, values derived by hand (a stack of 1024 bytes
at [0, 1024), growing down), and the replay of the probes recorded on an H200."""
from __future__ import annotations

import numpy as np
import pytest

from ptxsim.errors import PtxValidationError, UndefinedBehavior
from pathlib import Path

from ptxsim.isa.stack import Stack, StackOverflowError, check_align


def test_alloca_aligns_down_and_stacksave_reads_sp():
    st = Stack(threads=3, top=1024, limit=0)
    assert list(st.stacksave()) == [1024] * 3
    p = st.alloca([1, 8, 9])                       # default alignment 8
    assert list(p) == [1016, 1016, 1008]           # 1023 & ~7, 1016, 1015 & ~7
    q = st.alloca(100, 64)                         # 1016-100=916 -> 896 ; 1008-100=908 -> 896
    assert list(q) == [896, 896, 896]
    assert list(st.stacksave("u32")) == [896, 896, 896]
    assert st.stacksave("u32").dtype == np.uint32


def test_small_alignment_is_raised_to_frame_alignment():
    assert check_align(None) == 8 and check_align(1) == 8 and check_align(16) == 16
    for bad in (3, 0, 1 << 24):
        with pytest.raises(PtxValidationError):
            check_align(bad)


def test_stackrestore_releases_and_use_after_restore_is_reported():
    st = Stack(threads=2, top=1024, limit=0)
    saved = st.stacksave()
    p = st.alloca(16)
    st.check_access(p, 4)                          # live: fine
    st.stackrestore(saved)
    assert list(st.stacksave()) == [1024, 1024]
    with pytest.raises(UndefinedBehavior, match="released by stackrestore"):
        st.check_access(p, 4)


def test_restore_to_unknown_or_stale_lower_value_is_undefined():
    st = Stack(threads=1, top=1024, limit=0)
    with pytest.raises(UndefinedBehavior, match="not produced"):
        st.stackrestore([1000])                    # never saved
    s = st.stacksave()
    p = st.alloca(32)                              # 992
    st.stackrestore(s)                             # back to 1024: p's memory is released
    with pytest.raises(UndefinedBehavior, match="below the current"):
        st.stackrestore(p)                         # stale pointer below the stack pointer


def test_size_zero_allocation_access_is_undefined():
    st = Stack(threads=1, top=1024, limit=0)
    p = st.alloca(0)
    assert list(p) == [1024]
    with pytest.raises(UndefinedBehavior, match="size-0"):
        st.check_access(p, 1)


def test_overflow_names_the_thread():
    st = Stack(threads=4, top=256, limit=0)
    st.alloca([0, 0, 0, 200])
    with pytest.raises(StackOverflowError) as e:
        st.alloca([8, 8, 8, 64])                   # thread 3: 56 bytes left
    assert e.value.thread == 3


DATA = Path(__file__).resolve().parents[1] / "data" / "hardware" / "stack" / "stack_sm90.npz"


def test_replay_h200_stack_probes():
    """Each probe: s0 = stacksave; p = alloca(sz0, align); s1 = stacksave; q = alloca(sz1);
    s2 = stacksave; st.local [q]; stackrestore s0; s3 = stacksave (hardware/stack/stack_cases.py). Probes
    that faulted on the GPU (illegal address: the allocation left the 1024-byte stack) must
    overflow in ptxsim; the others must give the recorded pointers bit for bit."""
    z = np.load(DATA)
    sz0, sz1 = z["sizes"].astype(np.uint64)
    assert int(z["stack_size_limit"]) == 1024
    for name, typ, align, status, out in zip(z["names"], z["types"], z["aligns"], z["status"], z["outputs"]):
        al = None if align < 0 else int(align)
        st = Stack(threads=len(sz0))
        big = "big" in str(name)
        try:
            s0 = st.stacksave(str(typ))
            p = st.alloca(np.full_like(sz0, 1 << 20) if big else sz0, al, str(typ))
            s1 = st.stacksave(str(typ))
            q = st.alloca(sz1, None, str(typ))
            s2 = st.stacksave(str(typ))
            st.check_access(q, 4, active=sz1 > 0)        # size-0 stores are ptxsim's UB
            st.stackrestore(s0, str(typ))
            s3 = st.stacksave(str(typ))
        except StackOverflowError:
            assert str(status).startswith("fault"), f"{name}: ptxsim overflowed, the GPU did not"
            continue
        assert status == "ok", f"{name}: the GPU faulted ({status}), ptxsim did not"
        for j, v in enumerate((s0, p, s1, q, s2, s3)):
            assert np.array_equal(np.asarray(v).astype(np.uint32), out[j]), (name, j)


def test_threads_subset_and_reuse_after_restore():
    """threads=: only the executing threads move their sp (hand values: top 1024, alloca 16 at
    align 8 -> 1008). Re-allocating memory released by a restore makes it live again, and a
    save / alloca / restore loop keeps its bookkeeping bounded."""
    st = Stack(threads=4, top=1024, limit=0)
    p = st.alloca(16, threads=np.array([1, 3]))
    assert p.tolist() == [1008, 1008]
    assert st.stacksave().tolist() == [1024, 1008, 1024, 1008]
    st.stackrestore([1024, 1024], threads=np.array([1, 3]))
    for _ in range(200):
        s = st.stacksave(threads=np.array([1, 3]))
        q = st.alloca(16, threads=np.array([1, 3]))
        st.check_access(np.array([0, q[0], 0, q[1]], np.uint64), 4)   # live again: no error
        st.stackrestore(s, threads=np.array([1, 3]))
    assert len(st._saved) <= 4 and len(st._freed) <= 2
    with pytest.raises(UndefinedBehavior, match="released"):
        st.check_access(np.array([0, 1008, 0, 0], np.uint64), 4)
