"""Fast paths of the executor and of memory (docs/performance.md, issue 10, third pass) against
hand-derived values: element-wide gathers / scatters for aligned ld / st, the one-buffer test of
global addresses, the consecutive-thread slice of a converged step, and the per-thread arrays that
say why a thread waits (mbarrier token / parity, bar, barrier.cluster)."""
import numpy as np
import pytest

from ptxsim.errors import DeadlockError, MemoryAccessError, MisalignedAddress
from ptxsim.machine.executor import Launch, Wave, launch
from ptxsim.machine.memory import GlobalMemory, Memory
from ptxsim.ptx.instruction import Register


def _memory(*arrays, n_ctas=2, threads=64, dynamic_shared=4096):
    g = GlobalMemory()
    bases = [g.map(a) for a in arrays]
    return Memory(n_ctas=n_ctas, threads_per_cta=threads, dynamic_shared=dynamic_shared,
                  global_memory=g), bases


@pytest.mark.parametrize("size", [1, 2, 4, 8])
@pytest.mark.parametrize("vec", [1, 2, 4])
def test_aligned_global_load_is_the_buffers_elements(size, vec):
    rng = np.random.default_rng(size * 10 + vec)
    buf = rng.integers(0, 256, 4096, dtype=np.uint8).view(f"<u{size}")
    mem, (base,) = _memory(buf)
    n = 128
    first = rng.integers(0, buf.size // vec, n) * vec          # element index, vector aligned
    out = mem.load("global", base + first.astype(np.uint64) * np.uint64(size), size, vec=vec,
                   thread=np.arange(n))
    # by hand: element j of the vector is the one at byte address base + (first + j) * size
    np.testing.assert_array_equal(out, buf[first[:, None] + np.arange(vec)])


def test_global_store_last_writer_wins_and_other_bytes_untouched():
    buf = np.full(64, 0xEEEE, np.uint16)
    mem, (base,) = _memory(buf)
    addr = base + np.array([6, 2, 6, 10], np.uint64)        # threads 0 and 2 both hit byte 6
    mem.store("global", addr, np.array([[1], [2], [3], [4]], np.uint16), 2, thread=np.arange(4))
    want = np.full(64, 0xEEEE, np.uint16)
    want[[3, 1, 5]] = [3, 2, 4]                              # thread 2 after thread 0
    np.testing.assert_array_equal(buf, want)


def test_addresses_in_two_buffers_and_past_the_end():
    a = np.arange(16, dtype=np.uint32)
    b = np.arange(100, 116, dtype=np.uint32)
    mem, (ba, bb) = _memory(a, b)
    addr = np.array([ba + 4, bb + 8, ba + 60], np.uint64)    # a[1], b[2], a[15]
    out = mem.load("global", addr, 4, thread=np.arange(3))[:, 0]
    assert list(out) == [1, 102, 15]
    with pytest.raises(MemoryAccessError):                   # a's last 4 bytes, then past them
        mem.load("global", np.array([ba + 60, ba + 64], np.uint64), 4, thread=np.arange(2))
    with pytest.raises(MisalignedAddress):
        mem.load("global", np.array([ba + 4, ba + 2], np.uint64), 4, thread=np.arange(2))


@pytest.mark.parametrize("dynamic_shared", [4096, 4094])      # per-CTA size 4 | 4096, 4 ∤ 4094
def test_shared_word_and_byte_paths_agree_with_the_bytes(dynamic_shared):
    mem, _ = _memory(np.zeros(4, np.uint8), n_ctas=2, threads=64, dynamic_shared=dynamic_shared)
    thread = np.arange(128)                                   # CTA = thread // 64
    off = (thread % 64 * 8).astype(np.uint64)
    vals = (thread * 0x01010101 + 0x10203).astype(np.uint32)[:, None]
    mem.store("shared::cta", off, vals, 4, thread=thread)
    data = mem.shared.data
    for t in (0, 5, 64, 127):                                 # by hand: little-endian bytes
        c, o = t // 64, t % 64 * 8
        assert int.from_bytes(bytes(data[c, o:o + 4]), "little") == int(vals[t, 0])
    np.testing.assert_array_equal(mem.load("shared::cta", off, 4, thread=thread), vals)


TOKEN_WAIT = r""".version 8.8
.target sm_100a
.address_size 64
.visible .entry token_wait(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 8 .b64 bar;
    .shared .align 4 .b32 data;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p0, %r1, 0;
    @%p0 mbarrier.init.shared::cta.b64 [bar], 64;
    @%p0 st.shared.b32 [data], 0;
    bar.sync 0;
    setp.lt.u32 %p1, %r1, 32;
    @!%p1 bra LATE;
    mbarrier.arrive.shared::cta.b64 %rd2, [bar];
WAIT:
    mbarrier.try_wait.shared::cta.b64 %p2, [bar], %rd2;
    @!%p2 bra WAIT;
    ld.shared.b32 %r2, [data];
    bra STORE;
LATE:
    mul.lo.u32 %r3, %r1, 3;
    setp.eq.u32 %p3, %r1, 32;
    @%p3 st.shared.b32 [data], 7;
    mbarrier.arrive.shared::cta.b64 %rd3, [bar];
    mov.u32 %r2, %r3;
STORE:
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd1, %rd4;
    st.global.b32 [%rd5], %r2;
    ret;
}
"""                                                           # ptxas 13.0 -arch=sm_100a: accepted

CLUSTER_HANG = r""".version 8.8
.target sm_100a
.address_size 64
.visible .entry cluster_hang() .reqnctapercluster 2, 1, 1
{
    .reg .b32 %r<4>;
    .reg .pred %p<2>;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 32;
    @%p1 bra WAITER;
    bar.sync 1, 64;
    ret;
WAITER:
    barrier.cluster.arrive;
    barrier.cluster.wait;
    ret;
}
"""                                                           # ptxas 13.0 -arch=sm_100a: accepted


def test_token_wait_wakes_after_the_late_warp_and_sees_its_store():
    out = np.zeros(64, np.uint32)
    launch(TOKEN_WAIT, "token_wait", 1, 64, args=[out])
    # warp 0 waits in try_wait (state-token form) until warp 1 arrived; thread 32 stored 7 first
    want = np.where(np.arange(64) < 32, 7, 3 * np.arange(64)).astype(np.uint32)
    np.testing.assert_array_equal(out, want)


def test_cluster_and_bar_waiters_in_the_deadlock_report():
    with pytest.raises(DeadlockError) as e:
        launch(CLUSTER_HANG, "cluster_hang", 2, 64)
    reasons = sorted({w.reason for w in e.value.waits})
    assert reasons == ["barrier 1 of CTA 0: 32 of 64 threads arrived",
                       "barrier 1 of CTA 1: 32 of 64 threads arrived",
                       "barrier.cluster of cluster 0: not every thread arrived"]
    assert len(e.value.waits) == 4                            # 2 CTAs x 2 warps


SPAN = r""".version 8.8
.target sm_100a
.address_size 64
.visible .entry span(.param .u64 out)
{
    .reg .b32 %r<8>;
    .reg .b64 %rd<8>;
    .reg .pred %p<2>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.lo.u32 %r2, %r1, 3;
    and.b32 %r3, %r1, 1;
    setp.eq.u32 %p1, %r3, 1;
    @%p1 add.u32 %r2, %r2, 1000;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.b32 [%rd3], %r2;
    ret;
}
"""


def test_converged_and_guarded_steps_by_hand():
    out = np.zeros(96, np.uint32)
    launch(SPAN, "span", 1, 96, args=[out])
    t = np.arange(96)
    np.testing.assert_array_equal(out, (3 * t + 1000 * (t % 2)).astype(np.uint32))


def test_a_span_read_is_a_fresh_array_and_subsets_take_the_general_path():
    run = Launch(SPAN, "span", 1, 64, args=[np.zeros(64, np.uint32)])
    wave = Wave(run, np.array([0]))
    r = wave.reg("%r2")
    r[:] = np.arange(64, dtype=np.uint32)
    idx = np.arange(8, 40)
    wave._span_idx, wave._span = idx, slice(8, 40)          # as the scheduler sets it
    v = wave.read(Register("%r2"), idx)
    v[:] = 0                                                  # must not reach the register
    assert list(r[8:40]) == list(range(8, 40))
    wave.write(Register("%r2"), idx, np.full(32, 5, np.uint32))
    assert (r[8:40] == 5).all() and r[7] == 7 and r[40] == 40
    wave.advance(idx)
    wave.advance(np.array([8, 9]))                            # a subset: the general path
    assert list(wave.pc[6:12]) == [0, 0, 2, 2, 1, 1] and wave.pc[40] == 0
