"""The CUtensorMap bytes, tensormap.replace, cp_fenceproxy and the driver's refusals against the
H200 records (hardware/tensormap/capture.cu, driver 580.159.04; tensormap_sm90.npz)."""
import struct
from pathlib import Path

import numpy as np
import pytest

from ptxsim import cuda
from ptxsim.errors import CudaError, TensorMapError
from ptxsim.machine import tensormap as tm
from ptxsim.machine.tensormap import TensorMap

NPZ = Path(__file__).parents[1] / "data" / "hardware" / "tensormap" / "tensormap_sm90.npz"
REC = dict(np.load(NPZ))          # loaded once (an NpzFile reads the zip on every access)
NAMES = ["uint8", "uint16", "uint32", "int32", "uint64", "int64", "float16", "float32",
         "float64", "bfloat16", "float32_ftz", "tfloat32", "tfloat32_ftz", "16u4_align8b",
         "16u4_align16b", "16u6_align16b"]
SWIZ = ["none", "32B", "64B", "128B", "128B_atom_32B", "128B_atom_32B_flip_8B", "128B_atom_64B"]
FIELDS = ("global_address", "rank", "box_dim", "global_dim", "global_stride", "element_stride",
          "elemtype", "interleave_layout", "swizzle_mode", "fill_mode", "swizzle_atomicity")
# im2col calls whose accept / refuse decision differs from the H200 driver's: none of 1,200
# (the corner rule: machine/tensormap.py, TensorMap._validate_im2col)
IM2COL_DISAGREE = 0


def _encode(kind: str, i: int):
    r = {k[len(kind) + 1:]: REC[k][i] for k in REC if k.startswith(kind + "_")}
    rank = int(r["rank"])
    common = (int(r["dtype"]), rank, int(r["addr"]), r["dims"], r["strides"])
    tail = (r["estr"], int(r["interleave"]), int(r["swizzle"]), int(r["l2"]), int(r["oob"]))
    try:
        if kind == "tiled":
            return tm.encode_tiled_bytes(*common, r["box"], *tail, cc=(9, 0)), r
        return tm.encode_im2col_bytes(*common, r["lower"], r["upper"], int(r["cpp"]),
                                      int(r["ppc"]), *tail, cc=(9, 0)), r
    except TensorMapError:
        return None, r


def test_tiled_encoder_is_the_driver():
    """Every cuTensorMapEncodeTiled call of the sweep: the same accept / refuse decision, and
    byte-identical maps for the accepted ones (>= 1,000 maps)."""
    n = len(REC["tiled_result"])
    maps = 0
    for i in range(n):
        got, r = _encode("tiled", i)
        assert (got is not None) == (int(r["result"]) == 0), i
        if got is not None:
            assert got == r["map"].tobytes(), i
            maps += 1
    assert n >= 4900 and maps >= 1700


def test_im2col_encoder_is_the_driver():
    n = len(REC["im2col_result"])
    disagree = maps = 0
    for i in range(n):
        got, r = _encode("im2col", i)
        if (got is not None) != (int(r["result"]) == 0):
            disagree += 1
        elif got is not None:
            assert got == r["map"].tobytes(), i
            maps += 1
    assert maps >= 240 and disagree == IM2COL_DISAGREE



@pytest.mark.parametrize("i,accepted", [
    (89, True), (323, True),        # globalDim 2^31, upper < 0: dim + upper fits in an int32
    (1032, False), (987, False),    # globalDim 2^31, upper >= 0: dim + upper wraps negative
    (1018, True), (73, True),       # interleave: the corners bound dimensions 0 .. rank-3
    (121, False), (143, False),     # interleave: dimension 0 + upper <= lower
])
def test_im2col_corner_rule(i, accepted):
    """The recorded calls that pin the im2col corner rule (int32(globalDim + upper) > lower per
    spatial dimension; with interleave the spatial dimensions start at 0): the driver's verdict
    (recorded) and ptxsim's."""
    got, r = _encode("im2col", i)
    assert (int(r["result"]) == 0) == accepted
    assert (got is not None) == accepted

@pytest.mark.parametrize("kind", ["tiled", "im2col"])
def test_decoder_reads_every_recorded_map_back(kind):
    ok = np.flatnonzero(REC[f"{kind}_result"] == 0)
    for i in ok:
        r = {k[len(kind) + 1:]: REC[k][i] for k in REC if k.startswith(kind + "_")}
        R = int(r["rank"])
        m = TensorMap.from_bytes(r["map"])
        assert m.dtype == NAMES[r["dtype"]] and m.rank == R
        assert m.global_address == int(r["addr"])
        assert m.global_dim == tuple(int(x) for x in r["dims"][:R])
        assert m.global_strides == tuple(int(x) for x in r["strides"][:R - 1])
        assert m.element_strides == tuple(int(x) for x in r["estr"][:R])
        assert m.swizzle == SWIZ[r["swizzle"]]
        assert m.interleave == ["none", "16B", "32B"][r["interleave"]]
        assert m.l2_promotion == ["none", "64B", "128B", "256B"][r["l2"]]
        assert m.oob_fill == ["none", "nan_request_zero_fma"][r["oob"]]
        if kind == "tiled":
            assert m.mode == "tiled" and m.box_dim == tuple(int(x) for x in r["box"][:R])
        else:
            assert m.mode == "im2col"
            assert m.lower_corner == tuple(int(x) for x in r["lower"][:R - 2])
            assert m.upper_corner == tuple(int(x) for x in r["upper"][:R - 2])
            assert (m.channels_per_pixel, m.pixels_per_column) == (r["cpp"], r["ppc"])
        assert m.to_bytes() == r["map"].tobytes()


def test_tensormap_replace_writes_what_the_gpu_wrote():
    """3,843 tensormap.replace records (every field, ordinals, edge values; on 20 encoded maps
    and a zeroed block): the bytes after the instruction."""
    loaded = np.flatnonzero(REC["replace_loaded"] == 1)
    assert loaded.size >= 3800
    for i in loaded:
        before = REC["replace_bases"][REC["replace_base"][i]].tobytes()
        got = tm.replace_field(before, FIELDS[REC["replace_field"][i]],
                               int(REC["replace_value"][i]), int(REC["replace_ord"][i]))
        assert got == REC["replace_after"][i].tobytes(), i
    # what sm_90a's JIT refused: elemtype 13-15, interleave 3, swizzle_mode 4, swizzle_atomicity
    refused = {(FIELDS[REC["replace_field"][i]], int(REC["replace_value"][i]))
               for i in np.flatnonzero(REC["replace_loaded"] < 0)}
    assert refused == {("elemtype", 13), ("elemtype", 14), ("elemtype", 15),
                       ("interleave_layout", 3), ("swizzle_mode", 4)} | {
        ("swizzle_atomicity", v) for v in range(4)}


REPLACE_PTX = """.version 8.3
.target sm_90a
.address_size 64
.visible .entry rep(.param .u64 p_map, .param .u64 p_val) {{
 .reg .b64 %rd<4>; .reg .b32 %r<2>;
 ld.param.u64 %rd1, [p_map]; ld.param.u64 %rd2, [p_val]; cvt.u32.u64 %r1, %rd2;
 tensormap.replace.tile.{field}.global.b1024.{ty} {op}
 ret;
}}
"""


@pytest.fixture
def h200():
    cuda.configure(["h200"])
    cuda.cuInit(0)
    cuda.cuCtxSetCurrent(cuda.cuDevicePrimaryCtxRetain(0))
    yield
    cuda.configure(["b200"])


def test_tensormap_replace_through_the_executor(h200):
    """The kernels of the capture, run by ptxsim on a sample of the records (one per field,
    ordinal and value, on one encoded base and the zeroed block)."""
    slot = cuda.cuMemAlloc(128)
    seen = set()
    for i in np.flatnonzero(REC["replace_loaded"] == 1):
        f, o, v = FIELDS[REC["replace_field"][i]], int(REC["replace_ord"][i]), int(
            REC["replace_value"][i])
        b = int(REC["replace_base"][i])
        if (f, o, v) in seen and b != 0 or b > 1:
            continue
        seen.add((f, o, v))
        ty = "b64" if f in ("global_address", "global_stride") else "b32"
        reg = "%rd2" if ty == "b64" else "%r1"
        op = (f"[%rd1], {reg};" if f in ("global_address", "rank") else
              f"[%rd1], {o}, {reg};" if f in ("box_dim", "global_dim", "global_stride",
                                               "element_stride") else f"[%rd1], {v};")
        mod = cuda.cuModuleLoadData(REPLACE_PTX.format(field=f, ty=ty, op=op))
        fn = cuda.cuModuleGetFunction(mod, "rep")
        cuda.cuMemcpyHtoD(slot, REC["replace_bases"][b], 128)
        cuda.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, 0, [slot, v], None)
        assert cuda.device_array(slot, (128,), np.uint8).tobytes() == \
            REC["replace_after"][i].tobytes(), (f, o, v)
        cuda.cuModuleUnload(mod)
    assert len(seen) > 150


TMA_PTX = """.version 8.3
.target sm_90a
.address_size 64
.visible .entry cpfp(.param .u64 p_dst, .param .u64 p_src) {
 .shared .align 128 .b8 sm[128];
 .reg .b64 %rd<8>; .reg .b32 %r<4>;
 ld.param.u64 %rd1, [p_dst]; ld.param.u64 %rd2, [p_src]; mov.u32 %r1, %tid.x;
 mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd2, %rd3; ld.global.u32 %r2, [%rd4];
 mov.u64 %rd5, sm; add.s64 %rd6, %rd5, %rd3;
 st.shared.u32 [%rd6], %r2; bar.sync 0;
 tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%rd1], [sm], 128;
 ret;
}
.visible .entry tma(.param .u64 p_map, .param .u64 p_out, .param .u32 c0, .param .u32 c1, .param .u32 nbytes) {
 .shared .align 1024 .b8 smem[8192];
 .shared .align 8 .b64 bar;
 .reg .b64 %rd<8>; .reg .b32 %r<10>; .reg .pred %p<3>;
 ld.param.u64 %rd1, [p_map]; ld.param.u64 %rd2, [p_out]; ld.param.u32 %r1, [c0]; ld.param.u32 %r2, [c1];
 ld.param.u32 %r3, [nbytes]; mov.u32 %r4, %tid.x; setp.ne.u32 %p1, %r4, 0; @%p1 bra DONE;
 fence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;
 mbarrier.init.shared.b64 [bar], 1; fence.proxy.async.shared::cta;
 mbarrier.arrive.expect_tx.shared.b64 %rd3, [bar], %r3;
 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [smem], [%rd1, {%r1, %r2}], [bar];
WAIT:
 mbarrier.try_wait.parity.shared.b64 %p2, [bar], 0; @!%p2 bra WAIT;
 mov.u32 %r5, 0;
COPY:
 cvt.u64.u32 %rd4, %r5; mov.u64 %rd5, smem; add.s64 %rd5, %rd5, %rd4;
 ld.shared.u32 %r6, [%rd5]; add.s64 %rd6, %rd2, %rd4; st.global.u32 [%rd6], %r6;
 add.u32 %r5, %r5, 4; setp.lt.u32 %p2, %r5, 1024; @%p2 bra COPY;
DONE:
 ret;
}
"""


def test_tma_through_recorded_maps_and_cp_fenceproxy(h200):
    """Variant 0: tensormap.cp_fenceproxy copies the 128 bytes, nothing after them. Variants
    1-6: a TMA load through the driver's map, with its words 8-15 / 9 / 8 zeroed (the TMA unit
    ignores them: the same box), at another box and out of bounds — the box bytes the H200
    loaded (the map's address replaced by the one of ptxsim's copy of the tensor)."""
    mod = cuda.cuModuleLoadData(TMA_PTX)
    cpfp, tma = cuda.cuModuleGetFunction(mod, "cpfp"), cuda.cuModuleGetFunction(mod, "tma")
    kinds = REC["tma_kind"]
    i0 = int(np.flatnonzero(kinds == 0)[0])
    src, dst = cuda.cuMemAlloc(128), cuda.cuMemAlloc(256)
    cuda.cuMemcpyHtoD(src, REC["tma_map"][i0], 128)          # variant 0 stores the pattern
    cuda.cuLaunchKernel(cpfp, 1, 1, 1, 32, 1, 1, 0, 0, [dst, src], None)
    assert np.array_equal(cuda.device_array(dst, (256,), np.uint8),
                          np.concatenate([REC["tma_map"][i0], np.zeros(128, np.uint8)]))
    tensor = REC["tma_tensor"]
    g = cuda.cuMemAlloc(tensor.nbytes)
    cuda.cuMemcpyHtoD(g, tensor, tensor.nbytes)
    mapd, out = cuda.cuMemAlloc(128), cuda.cuMemAlloc(1024)
    for i in np.flatnonzero(kinds > 0):
        m = tm.replace_field(REC["tma_map"][i].tobytes(), "global_address", g)
        cuda.cuMemcpyHtoD(mapd, m, 128)
        c0, c1 = (int(x) for x in REC["tma_c"][i])
        cuda.cuLaunchKernel(tma, 1, 1, 1, 32, 1, 1, 0, 0, [mapd, out, c0, c1, 1024], None)
        assert np.array_equal(cuda.device_array(out, (1024,), np.uint8), REC["tma_out"][i]), i


# the host calls of capture.cu, made through ptxsim.cuda on the modelled H200: the CUresult each
# returned on the GPU (host cases whose "result" is a measured value are checked separately)
HOST_PTX = """.version 8.3
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p) { .reg .b64 %rd<3>; .reg .b32 %r<2>;
 ld.param.u64 %rd1, [p]; mov.u32 %r1, %tid.x; st.global.u32 [%rd1], %r1; ret; }
.visible .entry kb(.param .u64 p) .maxntid 128, 1, 1 { ret; }
.visible .entry kc(.param .u64 p) .reqnctapercluster 2, 1, 1 { ret; }
.visible .entry ke(.param .u64 p) .explicitcluster { ret; }
.visible .entry kt(.param .u64 p) { trap; ret; }
.visible .entry kbad(.param .u64 p) { .reg .b64 %rd<3>; .reg .b32 %r<2>;
 mov.u64 %rd1, 0x10; mov.u32 %r1, 1; st.global.u32 [%rd1], %r1; ret; }
.visible .entry kmis(.param .u64 p) { .reg .b64 %rd<3>; .reg .b32 %r<2>;
 ld.param.u64 %rd1, [p]; add.s64 %rd1, %rd1, 2; mov.u32 %r1, 1; st.global.u32 [%rd1], %r1; ret; }
"""


def _host_case(case: int) -> int:
    """Run capture.cu's host case `case` on ptxsim.cuda; the CUresult number."""
    c = cuda
    cuda.configure(["h200"])
    try:
        if case == 0:
            c.cuMemAlloc(16)
            return 0
        if case == 1:
            c.cuInit(1)
            return 0
        c.cuInit(0)
        if case == 2:
            c.cuMemAlloc(16)
            return 0
        if case == 3:
            c.cuDeviceGet(7)
            return 0
        c.cuCtxSetCurrent(c.cuDevicePrimaryCtxRetain(0))
        mod = c.cuModuleLoadData(HOST_PTX)
        f = {n: c.cuModuleGetFunction(mod, n) for n in ("k", "kb", "kc", "ke", "kt", "kbad",
                                                        "kmis")}
        p = c.cuMemAlloc(4096)
        host = bytearray(64)
        cfg = c.LaunchConfig(grid=(16, 1, 1), block=(32, 1, 1),
                             attrs={"CLUSTER_DIMENSION": (16, 1, 1)})

        def launch(fn, grid, block, smem=0, params=([p],), extra=None):
            c.cuLaunchKernel(f[fn], *grid, *block, smem, 0, params[0], extra)

        def freed():
            q = c.cuMemAlloc(64)
            c.cuMemFree(q)
            return q
        actions = {
            10: lambda: c.cuMemFree(freed()), 11: lambda: c.cuMemFree(0),
            12: lambda: c.cuMemFree(p + 16), 13: lambda: c.cuMemAlloc(0),
            14: lambda: c.cuMemcpyHtoD(p + 4096 - 16, host, 32),
            15: lambda: c.cuMemcpyDtoH(host, freed(), 16),
            16: lambda: c.cuModuleGetFunction(mod, "nope"),
            17: lambda: launch("k", (1, 1, 1), (32, 1, 1), 60000),
            18: lambda: c.cuFuncSetAttribute(f["k"], "MAX_DYNAMIC_SHARED_SIZE_BYTES", 232449),
            19: lambda: (c.cuFuncSetAttribute(f["k"], "MAX_DYNAMIC_SHARED_SIZE_BYTES", 100000),
                         launch("k", (1, 1, 1), (32, 1, 1), 100001)),
            20: lambda: c.cuLaunchKernelEx(cfg, f["k"], [p]),
            21: lambda: (c.cuFuncSetAttribute(f["k"], "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1),
                         c.cuLaunchKernelEx(cfg, f["k"], [p])),
            22: lambda: (c.cuFuncSetAttribute(f["k"], "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1),
                         c.cuLaunchKernelEx(c.LaunchConfig((32, 1, 1), (32, 1, 1), attrs={
                             "CLUSTER_DIMENSION": (32, 1, 1)}), f["k"], [p])),
            23: lambda: c.cuLaunchKernelEx(c.LaunchConfig((6, 1, 1), (32, 1, 1), attrs={
                "CLUSTER_DIMENSION": (4, 1, 1)}), f["k"], [p]),
            24: lambda: c.cuLaunchKernelEx(c.LaunchConfig((16, 1, 1), (32, 1, 1), attrs={
                "CLUSTER_DIMENSION": (4, 1, 1)}), f["kc"], [p]),
            25: lambda: launch("kc", (3, 1, 1), (32, 1, 1)),
            26: lambda: launch("k", (1, 1, 1), (1025, 1, 1)),
            27: lambda: launch("kb", (1, 1, 1), (256, 1, 1)),
            28: lambda: launch("k", (1, 1, 1), (1, 1, 65)),
            29: lambda: launch("k", (1, 65536, 1), (1, 1, 1)),
            30: lambda: c.cuModuleLoadData(".version 8.6\n.target sm_100a\n.address_size 64\n"
                                           ".visible .entry z() { ret; }\n"),
            31: lambda: c.cuModuleLoadData(".version 9.9\n.target sm_90\n.address_size 64\n"
                                           ".visible .entry z() { ret; }\n"),
            32: lambda: c.cuModuleLoadData(".version 8.0\n.target sm_90\n.address_size 64\n"
                                           ".visible .entry z() { bogus; }\n"),
            33: lambda: c.cuEventElapsedTime(c.cuEventCreate(0), c.cuEventCreate(0)),
            34: lambda: _timing_disabled(c),
            35: lambda: c.cuMemHostGetDevicePointer(np.zeros(64, np.uint8).ctypes.data, 0),
            36: lambda: c.cuMemFreeHost(p),
            37: lambda: c.cuFuncGetAttribute(99, f["k"]),
            38: lambda: c.cuDeviceGetAttribute(9999, 0),
            39: lambda: c.cuStreamDestroy(0),
            40: lambda: launch("k", (1, 1, 1), (32, 1, 1), 0, ([p],),
                               struct.pack("<Q", p)),
            41: lambda: (_quiet_launch(launch, "kbad"), c.cuMemAlloc(16)),
            42: lambda: launch("kt", (1, 1, 1), (32, 1, 1)),
            43: lambda: launch("kmis", (1, 1, 1), (1, 1, 1)),
            44: lambda: launch("ke", (2, 1, 1), (32, 1, 1)),
            45: lambda: c.cuLaunchKernelEx(c.LaunchConfig((100000, 1, 1), (32, 1, 1), attrs={
                "COOPERATIVE": 1}), f["k"], [p]),
            48: lambda: c.cuMemAlloc(1 << 50),
            52: lambda: _unloaded(c),
            53: lambda: launch("k", (1, 1, 1), (32, 1, 1), 0, (None,)),
        }
        actions[case]()
        return 0
    except CudaError as e:
        return e.code
    finally:
        cuda.configure(["b200"])


def _timing_disabled(c):
    a, b = c.cuEventCreate(0), c.cuEventCreate(2)
    c.cuEventRecord(a, 0)
    c.cuEventRecord(b, 0)
    c.cuEventElapsedTime(a, b)


def _quiet_launch(launch, name):
    try:
        launch(name, (1, 1, 1), (32, 1, 1))
    except CudaError:
        pass


def _unloaded(c):
    m = c.cuModuleLoadData(HOST_PTX)
    c.cuModuleUnload(m)
    c.cuModuleGetFunction(m, "k")


MEASURED_VALUES = {46, 47, 49, 50, 51}   # cases whose "result" is a value, not a CUresult


def _host_rows():
    for r in REC["host"]:
        if int(r[0]) in MEASURED_VALUES:
            continue
        # case 32 ('bogus;' in a kernel) is refused since the validator knows every opcode
        yield pytest.param(r, id=str(int(r[0])))


@pytest.mark.parametrize("row", list(_host_rows()))
def test_bad_host_calls_fail_like_the_driver(row):
    case, result, extra = (int(x) for x in row)
    assert _host_case(case) == result
    if case == 41:
        assert extra == 700          # the context stays broken: the next call fails the same


def test_host_values_measured():
    host = {int(r[0]): (int(r[1]), int(r[2])) for r in REC["host"]}
    cuda.configure(["h200"])
    try:
        cuda.cuInit(0)
        cuda.cuCtxSetCurrent(cuda.cuDevicePrimaryCtxRetain(0))
        f = cuda.cuModuleGetFunction(cuda.cuModuleLoadData(HOST_PTX), "k")
        # default MAX_DYNAMIC_SHARED_SIZE_BYTES of a kernel without static shared memory
        assert cuda.cuFuncGetAttribute("MAX_DYNAMIC_SHARED_SIZE_BYTES", f) == host[46][1]
        # a pinned host allocation's device pointer is the host pointer (unified addressing)
        h = cuda.cuMemHostAlloc(64, 2)
        assert int(cuda.cuMemHostGetDevicePointer(h, 0) == h) == host[50][0]
        # device allocations are at least 1024-byte aligned (the GPU: 1 KiB apart)
        assert cuda.cuMemAlloc(1000) % host[49][0] == 0
    finally:
        cuda.configure(["b200"])


PROBE = NPZ.parent / "probe_im2col_sm90.npz"


def test_im2col_corner_rule_probe():
    """20 cuTensorMapEncodeIm2col calls built to test the corner rule after it was found
    (hardware/tensormap/probe_im2col.*, H200 driver 580.159.04): globalDim 2^31 / 2^32 - 1 /
    2^32 with upper offsets either side of the int32 wrap, lower == / < dim + upper, interleave
    16B / 32B pairing the corners with dimensions 0 .. rank-3, ranks 3-5. The same decision on
    every call and the driver's bytes for the accepted ones."""
    rec = np.load(PROBE)
    assert (rec["result"] == 0).sum() == 10 and (rec["result"] != 0).sum() == 10
    for a, res, blob in zip(rec["args"], rec["result"], rec["map"]):
        rank = int(a[1])
        try:
            got = tm.encode_im2col_bytes(int(a[0]), rank, int(a[2]), a[3:3 + rank],
                                         a[8:7 + rank], a[12:10 + rank], a[15:13 + rank],
                                         int(a[18]), int(a[19]), a[20:20 + rank], int(a[25]),
                                         int(a[26]), int(a[27]), int(a[28]), cc=(9, 0))
        except TensorMapError:
            got = None
        assert (got is not None) == (int(res) == 0), list(a)
        if got is not None:
            assert got == blob.tobytes(), list(a)


DSL_MAPS = Path(__file__).parent / "data" / "dsl_packed_maps.json"
# CUtensorMapDataType (cuda.h, CUDA 13.x; cuda.bindings.driver.CUtensorMapDataType)
CU_PACKED = {"16u4_align8b": 13, "16u4_align16b": 14, "16u6_align16b": 15}


@pytest.mark.parametrize("typ", list(CU_PACKED))
def test_packed_element_codes_as_cute_dsl_writes_them(typ):
    """The packed types' element codes in the map (word 2 bits 7-10), which no sm_90 driver
    writes (the H200 refuses all 621 recorded packed-type calls): CuTe DSL 4.8.1, whose host
    code encodes its sm_100 maps inline, writes 11 / 12 / 13 for the operands that must be
    16U4_ALIGN8B (nvfp4, .kind::mxf4nvf4: two values per byte), 16U4_ALIGN16B and 16U6_ALIGN16B
    (.kind::mxf8f6f4: 16 values padded to 16 bytes; box 128 wide, which only those two types
    require) -- not the CUtensorMapDataType values 13 / 14 / 15. ptxsim decodes the DSL's words
    to the type and encodes the same arguments to the same words (the DSL also sets bit 1 of
    word 2, which no recorded H200 map has; ptxsim ignores it)."""
    import json
    rec = json.loads(DSL_MAPS.read_text())
    m = next(m for m in rec["maps"] if m["type"] == typ)
    words = [int(x, 16) for x in m["words0_15"]]
    blob = struct.pack("<32I", *words, *[0] * 16)
    dec = TensorMap.from_bytes(blob)
    assert dec.dtype == typ and dec.global_dim == (256, 256, 1)
    assert dec.box_dim == ((256,) if typ == "16u4_align8b" else (128,)) + (128, 1)
    enc = tm.encode_tiled_bytes(CU_PACKED[typ], 3, words[0] | words[1] << 32, (256, 256, 1),
                                dec.global_strides, dec.box_dim, (1, 1, 1), 0, 3, 2, 0,
                                cc=(10, 0))
    got = list(struct.unpack("<32I", enc))[:16]
    assert got[2] == words[2] & ~2 and got[:2] + got[3:] == words[:2] + words[3:16]
