"""State spaces and vectorised ld / st. Expected values come from the user's own numpy arrays
(numpy's byte views are the independent oracle) and hand-computed addresses."""
import numpy as np
import pytest

from ptxsim.errors import LaunchConfigError, MemoryAccessError, MisalignedAddress, OperandError
from ptxsim.machine.memory import (CLUSTER_RANK_SHIFT, GLOBAL_BASE, MAX_SHARED_PER_CTA, WINDOWS,
                                   GlobalMemory, Memory, SharedMemory)


def test_global_roundtrip_scalar_and_vector():
    m = Memory(threads_per_cta=32)
    A = np.arange(256, dtype=np.float32)
    a = m.global_.map(A, "A")
    assert a == GLOBAL_BASE
    # ld.global.f32: thread t reads A[t]
    got = m.load("global", a + 4 * np.arange(32), 4)
    np.testing.assert_array_equal(got[:, 0], A[:32].view(np.uint32))
    # ld.global.v4.f32: thread t reads A[4t .. 4t+3]
    got = m.load("global", a + 16 * np.arange(32), 4, vec=4)
    np.testing.assert_array_equal(got, A[:128].view(np.uint32).reshape(32, 4))
    # ld.global.v8.f32 (256-bit, sm_100): thread t reads A[8t .. 8t+7]
    got = m.load("global", a + 32 * np.arange(32), 4, vec=8)
    np.testing.assert_array_equal(got, A.view(np.uint32).reshape(32, 8))
    # st.global.v2.b32 writes through to the user's array
    m.store("global", a + 8 * np.arange(32), np.stack([np.arange(32), -np.arange(32)], 1), 4,
            vec=2)
    np.testing.assert_array_equal(A[:64:2].view(np.int32), np.arange(32))
    np.testing.assert_array_equal(A[1:64:2].view(np.int32), -np.arange(32))


def test_b128_and_b8_b16_b64():
    m = Memory()
    B = np.arange(64, dtype=np.uint8)
    b = m.global_.map(B)
    got = m.load("global", [b, b + 16], 16)
    assert got.shape == (2, 1, 2)
    assert int(got[0, 0, 0]) == int.from_bytes(bytes(range(8)), "little")
    assert int(got[1, 0, 1]) == int.from_bytes(bytes(range(24, 32)), "little")
    assert m.load("global", [b + 5], 1)[0, 0] == 5
    assert m.load("global", [b + 6], 2)[0, 0] == 6 | 7 << 8
    assert m.load("global", [b + 8], 8)[0, 0] == int.from_bytes(bytes(range(8, 16)), "little")


def test_torch_tensor_is_shared_not_copied():
    torch = pytest.importorskip("torch")
    m = Memory()
    T = torch.zeros(8, dtype=torch.float32)
    t = m.global_.map(T, "T")
    m.store("global", t + 4 * np.arange(8), np.float32(2.5), 4)
    assert T.tolist() == [2.5] * 8
    with pytest.raises(OperandError, match="non-contiguous"):
        m.global_.map(torch.zeros(4, 4).t())


def test_out_of_bounds_names_address_and_nearest_buffer():
    g = GlobalMemory()
    a = g.map(np.zeros(100, np.uint8), "A")
    b = g.map(np.zeros(64, np.uint8), "B")
    assert b > a + 100                      # a guard gap separates buffers
    m = Memory(global_memory=g)
    with pytest.raises(MemoryAccessError) as e:
        m.load("global", [a + 100], 4)      # first byte past A
    assert e.value.address == a + 100 and "past the end" in str(e.value) and "'A'" in str(e.value)
    with pytest.raises(MemoryAccessError, match="'B'"):
        m.load("global", [b - 4], 4)        # just before B
    with pytest.raises(MemoryAccessError):
        m.load("global", [a + 98], 4)       # straddles the end


def test_misaligned_and_masked_threads():
    m = Memory()
    A = np.zeros(16, np.uint32)
    a = m.global_.map(A)
    with pytest.raises(MisalignedAddress) as e:
        m.load("global", [a, a + 2], 4)
    assert e.value.thread == 1 and e.value.address == a + 2
    with pytest.raises(MisalignedAddress):   # .v2.b32 needs 8-byte alignment
        m.load("global", [a + 4], 4, vec=2)
    # inactive threads are neither checked nor written and read as zero
    A[:] = 7
    got = m.load("global", [a, 0xDEAD], 4, mask=[True, False])
    assert got[:, 0].tolist() == [7, 0]
    m.store("global", [a + 4, 3], 9, 4, mask=[True, False])
    assert A[1] == 9


def test_access_shapes_refused():
    m = Memory()
    with pytest.raises(OperandError):
        m.load("global", [0], 3)
    with pytest.raises(OperandError):
        m.load("global", [0], 8, vec=8)     # 64 bytes per thread
    with pytest.raises(OperandError):
        m.load("texture", [0], 4)


def test_shared_per_cta_and_cluster_mapa():
    m = Memory(n_ctas=4, threads_per_cta=32, cluster_size=2, static_shared=256)
    # thread t of CTA c stores c*100 + t at offset 4t of its own shared memory; a CTA's own
    # shared::cta addresses carry its rank in the cluster in bits 24+ (CUTLASS's 2-SM kernels
    # clear bit 24 of their own mbarrier address to name the even CTA: Sm100MmaPeerBitMask)
    thr = np.arange(128)
    rank = (thr // 32) % 2
    own = (rank << CLUSTER_RANK_SHIFT) | 4 * (thr % 32)
    m.store("shared::cta", own, thr // 32 * 100 + thr % 32, 4, thread=thr)
    assert m.shared.data[2, 8:12].view(np.uint32)[0] == 202
    assert m.shared.data[3, 8:12].view(np.uint32)[0] == 302
    # mapa: CTA 1 (rank 1 of cluster 0) reads CTA 0's word 5 through shared::cluster
    addr = m.shared.mapa([(1 << CLUSTER_RANK_SHIFT) | 20], 0, 1)
    assert int(addr[0]) == 20
    assert m.load("shared::cluster", addr, 4, thread=[32])[0, 0] == 5
    # the same rank from CTA 3 (rank 1 of cluster 1) means CTA 2
    assert m.load("shared::cluster", addr, 4, thread=[96])[0, 0] == 205
    # an own shared::cta address used as shared::cluster names the executing CTA; clearing
    # bit 24 of it names the even CTA of the pair
    a3 = (1 << CLUSTER_RANK_SHIFT) | 20
    assert m.load("shared::cluster", [a3], 4, thread=[96])[0, 0] == 305
    assert m.load("shared::cluster", [a3 & ~(1 << 24)], 4, thread=[96])[0, 0] == 205
    assert m.shared.getctarank(addr, 3)[0] == 0
    assert m.shared.getctarank([a3], 3)[0] == 1
    with pytest.raises(MemoryAccessError, match="rank 2"):
        m.shared.mapa([20], 2, 0)
    with pytest.raises(MemoryAccessError, match="rank 2"):
        m.load("shared::cluster", [2 << CLUSTER_RANK_SHIFT], 4)
    # shared::cta names the executing CTA only
    with pytest.raises(MemoryAccessError, match="not the executing CTA"):
        m.load("shared::cta", [20], 4, thread=[32])
    with pytest.raises(MemoryAccessError, match="beyond"):
        m.load("shared::cta", [256], 4)


def test_shared_limits():
    with pytest.raises(LaunchConfigError):
        SharedMemory(1, 48 * 1024 + 16)
    with pytest.raises(LaunchConfigError):
        SharedMemory(1, 1024, MAX_SHARED_PER_CTA)
    s = SharedMemory(1, 1024, MAX_SHARED_PER_CTA - 1024)
    assert s.size == 232448


def test_generic_windows_local_param_const():
    m = Memory(n_ctas=1, threads_per_cta=4, static_shared=64, local_bytes=16,
               param=np.arange(16, dtype=np.uint8).tobytes(), const=b"\x2a\0\0\0")
    G = np.zeros(4, np.uint32)
    g = m.global_.map(G)
    # cvta.shared then st through the generic address
    gs = m.cvta_to_generic("shared::cta", [8])
    assert int(gs[0]) == WINDOWS["shared"] + 8
    m.store("generic", gs, 0xABCD, 4, thread=[0])
    assert m.shared.data[0, 8:12].view(np.uint32)[0] == 0xABCD
    # local is per thread: the same local address, different storage
    gl = m.cvta_to_generic("local", np.zeros(4, np.uint64))
    m.store("generic", gl, np.arange(4) + 10, 4, thread=np.arange(4))
    assert m.load("local", np.zeros(4), 4, thread=np.arange(4))[:, 0].tolist() == [10, 11, 12, 13]
    # a mixed generic access: thread 0 global, thread 1 param, thread 2 const
    gp = int(m.cvta_to_generic("param", [4])[0])
    gc = int(m.cvta_to_generic("const", [0])[0])
    got = m.load("generic", [g, gp, gc], 4, thread=[0, 1, 2])
    assert got[:, 0].tolist() == [0, int.from_bytes(bytes([4, 5, 6, 7]), "little"), 42]
    assert m.isspacep("shared::cta", [gs[0], g]).tolist() == [True, False]
    assert int(m.cvta_from_generic("shared::cta", gs)[0]) == 8
    with pytest.raises(MemoryAccessError, match="cvta.to.local"):
        m.cvta_from_generic("local", gs)
    with pytest.raises(MemoryAccessError, match="read-only"):
        m.store("param", [0], 1, 4)


def test_signed_values_wrap_and_last_writer_wins():
    m = Memory()
    A = np.zeros(2, np.uint32)
    a = m.global_.map(A)
    m.store("global", [a], np.array([-1]), 4)
    assert A[0] == 0xFFFFFFFF
    # three threads store to one address: the highest active lane's value stays (documented)
    m.store("global", [a + 4] * 3, np.array([1, 2, 3]), 4)
    assert A[1] == 3


def test_256_bit_accesses_are_global_only():
    """ptxas 13.0 (sm_100a) accepts ld.global.v8.b32 / .v4.b64 and generic ld.v8.b32 but refuses
    ld.shared/.local/.const/.param.v8.b32 ("global state space expected for feature '256 bit
    wide load/store'") and .v8.b64 / .v2.b128 ("exceeds 128 bit limit")."""
    m = Memory(static_shared=64, local_bytes=64, const=bytes(64))
    for space in ("shared::cta", "local", "const", "param"):
        with pytest.raises(OperandError, match="256-bit"):
            m.load(space, [0], 4, vec=8)
    m.load("shared::cta", [0], 4, vec=4)                     # 128 bits are fine
    with pytest.raises(MemoryAccessError, match="global memory only"):
        m.load("generic", m.cvta_to_generic("shared::cta", [0]), 8, vec=4)
    A = np.arange(8, dtype=np.uint64)
    assert m.load("generic", [m.global_.map(A)], 8, vec=4)[0].tolist() == [0, 1, 2, 3]


def test_random_roundtrip_against_numpy_views():
    """Random aligned scalar / vector stores then loads; the oracle is numpy's own view of the
    same bytes."""
    hyp = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")

    @hyp.settings(max_examples=60, deadline=None)
    @hyp.given(size=st.sampled_from([1, 2, 4, 8]), vec=st.sampled_from([1, 2, 4]),
               slots=st.lists(st.integers(0, 15), min_size=1, max_size=32, unique=True),
               seed=st.integers(0, 2**32 - 1))
    def check(size, vec, slots, seed):
        m = Memory()
        A = np.zeros(16 * 32, np.uint8)
        a = m.global_.map(A)
        total = size * vec
        addr = a + total * np.array(slots)
        vals = np.random.default_rng(seed).integers(0, 2**64 - 1, (len(slots), vec), np.uint64,
                                                    endpoint=True) & np.uint64((1 << 8 * size) - 1)
        m.store("global", addr, vals, size, vec=vec)
        view = A[: 16 * total].view(f"<u{size}").reshape(16, vec)
        np.testing.assert_array_equal(view[slots], vals)
        np.testing.assert_array_equal(m.load("global", addr, size, vec=vec), vals)
    check()


def test_pack_params_layout_and_tensor_map_through_generic_param():
    from ptxsim.machine.params import pack_params
    from ptxsim.machine.tensormap import TensorMap
    g = GlobalMemory()
    A = np.zeros((64, 64), np.uint16)
    tm = TensorMap.for_array(A, (64, 16), swizzle="128B", dtype="bfloat16")
    X = np.zeros(16, np.float32)
    # .param .u32 n, .param .u64 x, .param .align 64 .b8 tmap[128], .param .f32 alpha
    image, offs = pack_params([(4, 4), (8, 8), (128, 64), (4, 4)], [-3, X, tm, 0.5], g)
    assert offs == [0, 8, 64, 192] and len(image) == 196     # hand layout: align each
    assert image[0:4] == (2**32 - 3).to_bytes(4, "little")
    assert int.from_bytes(image[8:16], "little") == g.address_of(X)
    assert np.frombuffer(image[192:196], "<f4")[0] == 0.5
    m = Memory(param=image, global_memory=g)
    blob = m.read_block("generic", int(m.cvta_to_generic("param", [64])[0]), 128)
    back = TensorMap.from_bytes(blob)
    assert back.global_address == g.address_of(A) and back.box_dim == (64, 16)
    with pytest.raises(OperandError, match="64 bytes"):
        pack_params([(128, 8)], [tm], g)
    with pytest.raises(OperandError, match="declares 2"):
        pack_params([(4, 4), (4, 4)], [1], g)


def test_atomics_serialise_per_address():
    """32 lanes atom.add.u32 1 on one counter: old values 0..31 in lane order, final 32; the
    result of n serial additions is independent of their order for integers."""
    m = Memory(static_shared=64)
    C = np.zeros(4, np.uint32)
    c = m.global_.map(C)
    old = m.atomic("global", np.full(32, c), 4, "add", (np.ones(32),))
    assert old.tolist() == list(range(32)) and C[0] == 32
    # mixed addresses and a mask: lanes 0,2 -> word 1; lane 1 -> word 2; lane 3 inactive
    old = m.atomic("global", [c + 4, c + 8, c + 4, c + 4], 4, "add", ([5, 7, 9, 100],),
                   mask=[True, True, True, False])
    assert old.tolist() == [0, 0, 5, 0] and C[1:3].tolist() == [14, 7]


def test_atomic_ops_by_hand():
    m = Memory(static_shared=64)
    w = np.zeros(1, np.uint64)   # shared offset 0
    m.store("shared::cta", [0], 10, 4)
    # inc with bound 11: 10 -> 11 -> 0 (wraps at the bound); dec with bound 5: 0 -> 5 -> 4
    assert m.atomic("shared::cta", [0, 0], 4, "inc", ([11, 11],)).tolist() == [10, 11]
    assert m.load("shared::cta", [0], 4)[0, 0] == 0
    assert m.atomic("shared::cta", [0, 0], 4, "dec", ([5, 5],)).tolist() == [0, 5]
    assert m.load("shared::cta", [0], 4)[0, 0] == 4
    # cas: lane 0 swaps 4 -> 9, lane 1 compares with 4 again and fails
    assert m.atomic("shared::cta", [0, 0], 4, "cas", ([4, 4], [9, 1])).tolist() == [4, 9]
    assert m.load("shared::cta", [0], 4)[0, 0] == 9
    # signed vs unsigned min on 0xFFFFFFFF (-1)
    m.store("shared::cta", [8, 12], np.array([0xFFFFFFFF, 0xFFFFFFFF], np.uint32), 4)
    m.atomic("shared::cta", [8, 12], 4, "min.s", ([3, 3],))
    assert m.load("shared::cta", [8], 4)[0, 0] == 0xFFFFFFFF            # -1 < 3
    m.atomic("shared::cta", [12], 4, "min.u", ([3],))
    assert m.load("shared::cta", [12], 4)[0, 0] == 3
    # 64-bit exch and add wrap
    m.store("shared::cta", [16], np.uint64(2**64 - 1), 8)
    assert m.atomic("shared::cta", [16], 8, "add", ([2],))[0] == 2**64 - 1
    assert m.load("shared::cta", [16], 8)[0, 0] == 1
    # a custom op (what the float semantics will pass): old * 2 + b
    assert m.atomic("shared::cta", [16, 16], 8, lambda o, b: o * 2 + b, ([1, 1],)).tolist() \
        == [1, 3]
    assert m.load("shared::cta", [16], 8)[0, 0] == 7
    with pytest.raises(MisalignedAddress):
        m.atomic("shared::cta", [2], 4, "add", ([1],))


def test_atomic_add_fast_path_equals_serial_application():
    """The commuting integer-add path must equal applying the adds one by one in thread order
    (the generic path, driven here through a custom op with the same arithmetic)."""
    rng = np.random.default_rng(0)
    for size in (4, 8):
        dt = np.dtype(f"u{size}")
        for _ in range(20):
            n = 64
            addrs = rng.integers(0, 8, n) * size
            vals = rng.integers(0, 2**63, n).astype(dt) * dt.type(3)
            init = rng.integers(0, 2**63, 16).astype(dt)
            m1, m2 = Memory(static_shared=16 * size), Memory(static_shared=16 * size)
            m1.shared.data[0] = init.view(np.uint8)
            m2.shared.data[0] = init.view(np.uint8)
            t = np.zeros(n, int)
            o1 = m1.atomic("shared::cta", addrs, size, "add", (vals,), thread=t)
            o2 = m2.atomic("shared::cta", addrs, size, lambda o, b: o + b, (vals,), thread=t)
            np.testing.assert_array_equal(o1, o2)
            np.testing.assert_array_equal(m1.shared.data, m2.shared.data)
    with pytest.raises(OperandError, match="thread numbers"):
        Memory().load("global", [0], 4, thread=[32])


def test_isspacep_shared_cta_is_own_cta_only():
    m = Memory(n_ctas=2, cluster_size=2, static_shared=64)
    own = m.cvta_to_generic("shared::cluster", m.shared.mapa([8], 0, 0))
    other = m.cvta_to_generic("shared::cluster", m.shared.mapa([8], 1, 0))
    plain = m.cvta_to_generic("shared::cta", [8])
    addrs = np.concatenate([own, other, plain])
    assert m.isspacep("shared::cta", addrs, cta=0).tolist() == [True, False, True]
    assert m.isspacep("shared::cta", addrs, cta=1).tolist() == [False, True, False]
    assert m.isspacep("shared::cluster", addrs).tolist() == [True, True, True]
    assert m.isspacep("global", addrs).tolist() == [False, False, False]
