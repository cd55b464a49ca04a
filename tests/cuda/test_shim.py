"""ptxsim.cuda.shim, the C side of the stand-ins for libcuda.so.1 / libcudart.so.13: the driver
stand-in loaded into this process (ctypes, as cuda-python would load libcuda) answers C calls
through ptxsim.cuda; the struct layouts it writes agree with CUDA 13.0's headers (checked with
the C compiler where they are installed); the runtime's error names and strings are
libcudart 13.0's own (checked against that library where it is installed)."""
import ctypes
import shutil
import sys
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ptxsim import cuda
from ptxsim.cuda import shim
from ptxsim.cuda.runtime_enums import CUDA_ERRORS

LIB = cuda.native_path("cuda")
sys.path.insert(0, str(Path(__file__).parents[1]))
import toolchain  # noqa: E402

NVCC = toolchain.nvcc()

def _cuda_home():
    import os
    cands = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    if NVCC:
        cands.append(str(Path(NVCC).resolve().parent.parent))
    for c in cands:
        if c and (Path(c) / "include" / "cuda_runtime_api.h").exists():
            return Path(c)
    return None


HOME = _cuda_home()
INCLUDE = HOME / "include" if HOME else None

SCALE = """.version 8.8
.target sm_100a
.address_size 64
.visible .entry scale(.param .u64 p, .param .f32 s, .param .u32 n)
{
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mad.lo.u32 %r4, %r2, %r3, %r1;
    ld.param.u32 %r5, [n];
    setp.ge.u32 %p1, %r4, %r5;
    @%p1 ret;
    ld.param.u64 %rd1, [p];
    mul.wide.u32 %rd2, %r4, 4;
    add.u64 %rd3, %rd1, %rd2;
    ld.global.f32 %f1, [%rd3];
    ld.param.f32 %f2, [s];
    mul.f32 %f3, %f1, %f2;
    st.global.f32 [%rd3], %f3;
    ret;
}
"""


@pytest.fixture
def libcuda():
    if LIB is None:
        pytest.skip("ptxsim's CUDA stand-ins were not built (no shared libpython?)")
    cuda.reset()
    yield ctypes.CDLL(LIB)
    cuda.reset()


def test_the_driver_stand_in_runs_a_kernel_from_c_calls(libcuda):
    u64, i32 = ctypes.c_uint64, ctypes.c_int
    assert libcuda.cuInit(0) == 0
    n = i32()
    assert libcuda.cuDeviceGetCount(ctypes.byref(n)) == 0 and n.value == 1
    name = ctypes.create_string_buffer(64)
    assert libcuda.cuDeviceGetName(name, 64, 0) == 0 and name.value == b"NVIDIA B200"
    ctx = u64()
    assert libcuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    assert libcuda.cuCtxSetCurrent(ctx) == 0
    x = np.arange(300, dtype=np.float32)
    d = u64()
    assert libcuda.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(x.nbytes)) == 0
    assert libcuda.cuMemcpyHtoD_v2(d, x.ctypes.data_as(ctypes.c_void_p),
                                   ctypes.c_size_t(x.nbytes)) == 0
    mod, fn = u64(), u64()
    assert libcuda.cuModuleLoadData(ctypes.byref(mod), SCALE.encode() + b"\0") == 0
    assert libcuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"scale") == 0
    s, cnt = ctypes.c_float(-1.5), ctypes.c_uint32(300)
    params = (ctypes.c_void_p * 3)(ctypes.addressof(d), ctypes.addressof(s),
                                   ctypes.addressof(cnt))
    assert libcuda.cuLaunchKernel(fn, 3, 1, 1, 128, 1, 1, 0, None, params, None) == 0
    y = np.zeros_like(x)
    assert libcuda.cuMemcpyDtoH_v2(y.ctypes.data_as(ctypes.c_void_p), d,
                                   ctypes.c_size_t(x.nbytes)) == 0
    assert np.array_equal(y, x * np.float32(-1.5))
    # errors come back as CUresult codes, with the driver's names
    assert libcuda.cuMemFree_v2(u64(0x1234)) == 1
    p = ctypes.c_char_p()
    assert libcuda.cuGetErrorName(1, ctypes.byref(p)) == 0
    assert p.value == b"CUDA_ERROR_INVALID_VALUE"
    # an entry point ptxsim does not model: a named error, not a crash
    assert libcuda.cuGraphCreate(ctypes.byref(u64()), 0) == 801
    assert libcuda.cuMemFree_v2(d) == 0


def test_get_proc_address_hands_out_the_stand_ins_own_entry_points(libcuda):
    assert libcuda.cuInit(0) == 0
    pfn = ctypes.c_void_p()
    status = ctypes.c_int(-1)
    assert libcuda.cuGetProcAddress_v2(b"cuTensorMapEncodeTiled", ctypes.byref(pfn), 12000,
                                       ctypes.c_uint64(0), ctypes.byref(status)) == 0
    assert status.value == 0
    assert pfn.value == ctypes.cast(libcuda.cuTensorMapEncodeTiled, ctypes.c_void_p).value
    assert libcuda.cuGetProcAddress_v2(b"cuNoSuchThing", ctypes.byref(pfn), 12000,
                                       ctypes.c_uint64(0), ctypes.byref(status)) == 500
    # cuMemAlloc resolves to the _v2 entry point, as the driver's does
    assert libcuda.cuGetProcAddress_v2(b"cuMemAlloc", ctypes.byref(pfn), 12000,
                                       ctypes.c_uint64(0), ctypes.byref(status)) == 0
    assert pfn.value == ctypes.cast(libcuda.cuMemAlloc_v2, ctypes.c_void_p).value


def test_the_runtime_error_table_is_libcudarts():
    path = (HOME / "lib64" / "libcudart.so.13") if HOME else None
    if path is None or not path.exists():
        pytest.skip("NVIDIA's libcudart.so.13 is not installed")
    rt = ctypes.CDLL(str(path))
    rt.cudaGetErrorString.restype = rt.cudaGetErrorName.restype = ctypes.c_char_p
    for name, (code, text) in CUDA_ERRORS.items():
        assert rt.cudaGetErrorName(code).decode() == name
        assert rt.cudaGetErrorString(code).decode() == text


def test_every_cuda_result_maps_to_a_runtime_error():
    from ptxsim.cuda import enums
    unknown = [r for r in enums.CURESULT if shim.rt_name(r) == "cudaErrorUnknown"
               and r != "CUDA_ERROR_UNKNOWN"]
    # the driver-only results (graphics interop, IPC, ...) that the runtime has no name for
    assert len(unknown) < 20, unknown
    assert shim.rt_name("CUDA_ERROR_LAUNCH_FAILED") == "cudaErrorLaunchFailure"
    assert shim.rt_name("CUDA_ERROR_ILLEGAL_ADDRESS") == "cudaErrorIllegalAddress"
    assert shim.rt_name("CUDA_ERROR_ASSERT") == "cudaErrorAssert"
    assert shim.rt_name("CUDA_ERROR_NO_BINARY_FOR_GPU") == "cudaErrorNoKernelImageForDevice"


@pytest.mark.skipif(INCLUDE is None or shutil.which("gcc") is None,
                    reason="needs CUDA's headers and gcc")
def test_struct_layouts_agree_with_the_cuda_13_headers(tmp_path):
    fields = [n for n, _, _, _ in shim.PROP_FIELDS]
    src = ["#include <stdio.h>", "#include <stddef.h>", "#include <cuda_runtime_api.h>",
           "int main(void) {",
           'printf("%zu\\n", sizeof(struct cudaDeviceProp));']
    src += [f'printf("%zu\\n", offsetof(struct cudaDeviceProp, {f}));' for f in fields]
    src += ['printf("%zu %zu %zu\\n", sizeof(struct cudaFuncAttributes), '
            'offsetof(struct cudaFuncAttributes, maxThreadsPerBlock), '
            'offsetof(struct cudaFuncAttributes, nonPortableClusterSizeAllowed));',
            'printf("%zu %zu %zu\\n", sizeof(struct cudaPointerAttributes), '
            'offsetof(struct cudaPointerAttributes, devicePointer), '
            'offsetof(struct cudaPointerAttributes, hostPointer));',
            'printf("%zu %zu %zu %zu %zu\\n", offsetof(cudaLaunchConfig_t, dynamicSmemBytes), '
            'offsetof(cudaLaunchConfig_t, stream), offsetof(cudaLaunchConfig_t, attrs), '
            'offsetof(cudaLaunchConfig_t, numAttrs), sizeof(cudaLaunchAttribute));',
            'return 0; }']
    (tmp_path / "l.c").write_text("\n".join(src))
    subprocess.run(["gcc", f"-I{INCLUDE}", str(tmp_path / "l.c"), "-o", str(tmp_path / "l")],
                   check=True, capture_output=True)
    out = subprocess.run([str(tmp_path / "l")], capture_output=True, text=True).stdout.split("\n")
    assert int(out[0]) == ctypes.sizeof(shim.DeviceProp) == 1008
    for f, line in zip(fields, out[1:]):
        assert getattr(shim.DeviceProp, f).offset == int(line), f
    k = 1 + len(fields)
    # what shim.py writes / reads at fixed offsets
    assert out[k].split() == ["144", "24", "72"]        # 3 size_t, then 13 ints from 24
    assert out[k + 1].split() == ["88", "8", "16"]
    assert out[k + 2].split() == ["24", "32", "40", "48", "72"]


def test_a_launch_report_carries_the_kernels_warnings(tmp_path, monkeypatch, capsys):
    import json
    import warnings

    from ptxsim.errors import SpecDeviationWarning
    monkeypatch.setenv("PTXSIM_EXEC_REPORT", str(tmp_path / "r.jsonl"))
    cuda.reset()

    def kernel():
        warnings.warn(SpecDeviationWarning("line 9: as the hardware does"))
        warnings.warn(SpecDeviationWarning("line 9: as the hardware does"))
    shim._launch_call(kernel, "k", (1, 1, 1), (32, 1, 1), None, 0)
    (ev,) = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert ev["warnings"] == ["SpecDeviationWarning: line 9: as the hardware does"]
    assert capsys.readouterr().err.count("as the hardware does") == 1


def test_the_sm100_only_128B_atom_swizzle_encodes_on_a_b200_and_is_refused_on_an_h200():
    # CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B = 4 (CUTLASS example 83's metadata map, CUTLASS 4.2's
    # fp32 epilogue): encoded on the B200 the model is (its bits are ptxsim's placement,
    # docs/cuda.md), read back as that swizzle; the H200's driver refuses it (recorded sweep)
    from ptxsim.errors import CudaError
    from ptxsim.machine.tensormap import TensorMap
    cuda.reset()
    cuda.cuInit(0)
    cuda.cuCtxSetCurrent(cuda.cuDevicePrimaryCtxRetain(0))
    d = cuda.cuMemAlloc(1 << 16)
    tm = cuda.cuTensorMapEncodeTiled(7, 2, d, [256, 64], [1024], [32, 16], [1, 1], 0, 4, 2, 0)
    assert TensorMap.from_bytes(bytes(tm)).swizzle == "128B_atom_32B"
    cuda.reset()
    cuda.configure(["h200"])
    try:
        cuda.cuInit(0)
        cuda.cuCtxSetCurrent(cuda.cuDevicePrimaryCtxRetain(0))
        d = cuda.cuMemAlloc(1 << 16)
        with pytest.raises(CudaError) as e:
            cuda.cuTensorMapEncodeTiled(7, 2, d, [256, 64], [1024], [32, 16], [1, 1], 0, 4, 2, 0)
        assert e.value.result == "CUDA_ERROR_INVALID_VALUE" and "128B_ATOM" in e.value.why
    finally:
        cuda.reset()
        cuda.configure(None)
