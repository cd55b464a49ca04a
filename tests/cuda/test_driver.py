"""ptxsim.cuda, the CUDA driver API model: calls, results, failures (docs/cuda.md).

Kernels: tests/data/ptx/cuda/driver_kernels.ptx (nvcc 13.0 output of driver_kernels.cu); expected
numbers from numpy; enum values from cuda-python's cuda.bindings.driver."""
import ctypes
import re
import struct
from pathlib import Path

import numpy as np
import pytest

from ptxsim import cuda
from ptxsim.errors import CudaError

PTX = (Path(__file__).parents[1] / "data" / "ptx" / "cuda" / "driver_kernels.ptx").read_text()


@pytest.fixture
def ctx():
    cuda.configure(["b200"])
    cuda.cuInit(0)
    c = cuda.cuDevicePrimaryCtxRetain(0)
    cuda.cuCtxSetCurrent(c)
    yield c
    cuda.configure(["b200"])


def fails(result, fn, *args):
    with pytest.raises(CudaError) as e:
        fn(*args)
    assert e.value.result == result, str(e.value)
    assert e.value.code == cuda.CURESULT[result]
    assert fn.__name__ in str(e.value)
    return e.value


def test_enums_match_cuda_python():
    drv = pytest.importorskip("cuda.bindings.driver")
    from ptxsim.cuda import enums
    for table, enum, prefix in ((enums.CURESULT, drv.CUresult, ""),
                                (enums.DEVICE_ATTRIBUTE, drv.CUdevice_attribute,
                                 "CU_DEVICE_ATTRIBUTE_"),
                                (enums.FUNCTION_ATTRIBUTE, drv.CUfunction_attribute,
                                 "CU_FUNC_ATTRIBUTE_"),
                                (enums.LAUNCH_ATTRIBUTE, drv.CUlaunchAttributeID,
                                 "CU_LAUNCH_ATTRIBUTE_"),
                                (enums.POINTER_ATTRIBUTE, drv.CUpointer_attribute,
                                 "CU_POINTER_ATTRIBUTE_"), (enums.LIMIT, drv.CUlimit, "CU_LIMIT_")):
        for name, value in table.items():
            assert int(getattr(enum, prefix + name)) == value, name


def test_b200_device_query(ctx):
    # CUDA C++ Programming Guide, compute capability 10.0; B200 SM count
    assert cuda.cuDeviceGetCount() == 1
    assert cuda.cuDeviceGetName(0) == "NVIDIA B200"
    assert cuda.cuDeviceComputeCapability(0) == (10, 0)
    q = {n: cuda.cuDeviceGetAttribute(n, 0) for n in (
        "MULTIPROCESSOR_COUNT", "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
        "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", "MAX_SHARED_MEMORY_PER_BLOCK", "CLUSTER_LAUNCH",
        "COMPUTE_CAPABILITY_MAJOR", "MAX_THREADS_PER_MULTIPROCESSOR", "WARP_SIZE")}
    assert q == {"MULTIPROCESSOR_COUNT": 148, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 228 * 1024,
                 "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": 227 * 1024,
                 "MAX_SHARED_MEMORY_PER_BLOCK": 48 * 1024, "CLUSTER_LAUNCH": 1,
                 "COMPUTE_CAPABILITY_MAJOR": 10, "MAX_THREADS_PER_MULTIPROCESSOR": 2048,
                 "WARP_SIZE": 32}
    # the numeric enum works too (CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16)
    assert cuda.cuDeviceGetAttribute(16, 0) == 148
    fails("CUDA_ERROR_INVALID_DEVICE", cuda.cuDeviceGet, 1)
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuDeviceGetAttribute, 9999, 0)


def test_other_devices():
    cuda.configure(["rtx5090", "b300"])
    try:
        cuda.cuInit(0)
        assert cuda.cuDeviceGetCount() == 2
        assert cuda.cuDeviceComputeCapability(0) == (12, 0)
        assert cuda.cuDeviceComputeCapability(1) == (10, 3)
        assert cuda.cuDeviceGetAttribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 0) == 99 * 1024
    finally:
        cuda.configure(["b200"])


def test_not_initialized_and_no_context():
    cuda.configure(["b200"])
    fails("CUDA_ERROR_NOT_INITIALIZED", cuda.cuMemAlloc, 16)
    cuda.cuInit(0)
    fails("CUDA_ERROR_INVALID_CONTEXT", cuda.cuMemAlloc, 16)
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuInit, 1)


def test_memory_roundtrip_and_bad_pointers(ctx):
    x = np.arange(300, dtype=np.float32)
    d = cuda.cuMemAlloc(x.nbytes)
    assert d % 256 == 0
    cuda.cuMemcpyHtoD(d, x, x.nbytes)
    d2 = cuda.cuMemAlloc(x.nbytes)
    cuda.cuMemcpyDtoD(d2, d, x.nbytes)
    out = np.zeros_like(x)
    cuda.cuMemcpyDtoH(out, d2, x.nbytes)
    assert np.array_equal(out, x)
    cuda.cuMemsetD32(d2 + 8, 0x3F800000, 4)
    cuda.cuMemcpy(out, d2, x.nbytes)                       # unified: device -> host
    assert np.array_equal(out[2:6], np.ones(4, np.float32)) and out[6] == 6
    assert cuda.cuMemGetAddressRange(d + 100) == (d, x.nbytes)
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuMemcpyHtoD, d + 8, x, x.nbytes)   # past the end
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuMemAlloc, 0)
    cuda.cuMemFree(d2)
    e = fails("CUDA_ERROR_INVALID_VALUE", cuda.cuMemFree, d2)                   # twice
    assert "already freed" in str(e)
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuMemcpyDtoH, out, d2, 4)           # after free
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuMemFree, d + 4)                   # not a start
    h = cuda.cuMemHostAlloc(64, 2)                         # DEVICEMAP
    assert cuda.cuMemHostGetDevicePointer(h, 0) == h
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuMemFree, h)   # host memory: cuMemFreeHost
    cuda.cuMemFreeHost(h)


def _load(ctx):
    mod = cuda.cuModuleLoadData(PTX)
    return mod, cuda.cuModuleGetFunction(mod, "saxpy"), cuda.cuModuleGetFunction(mod, "clus")


def saxpy_params(a, dx, dy, n) -> bytes:
    return struct.pack("<f4xQQi4x", a, dx, dy, n)           # struct Params, 32 bytes


def test_launch_struct_params_globals_and_constants(ctx):
    mod, saxpy, _ = _load(ctx)
    assert cuda.cuFuncGetParamInfo(saxpy, 0) == (0, 32)
    n = 1000
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    dx, dy = cuda.cuMemAlloc(4 * n), cuda.cuMemAlloc(4 * n)
    cuda.cuMemcpyHtoD(dx, x, 4 * n)
    cuda.cuMemcpyHtoD(dy, y, 4 * n)
    dscale, size = cuda.cuModuleGetGlobal(mod, "scale")     # __constant__ float scale[4]
    assert size == 16
    cuda.cuMemcpyHtoD(dscale, np.array([0.5, 0, 0, 0], np.float32), 16)
    for _ in range(2):
        cuda.cuLaunchKernel(saxpy, 4, 1, 1, 256, 1, 1, 0, 0, [saxpy_params(2.0, dx, dy, n)],
                            None)
    got = cuda.device_array(dy, (n,), np.float32)
    want = y
    for _ in range(2):        # the kernel rounds a*x, then *scale, then + y (no fma contraction
        want = (np.float32(2.0) * x * np.float32(0.5) + want).astype(np.float32)   # changes it)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    dcount, _ = cuda.cuModuleGetGlobal(mod, "counter")      # __device__ int counter
    assert cuda.device_array(dcount, (1,), np.int32)[0] == 2  # lives across launches
    fails("CUDA_ERROR_NOT_FOUND", cuda.cuModuleGetGlobal, mod, "nothing")
    fails("CUDA_ERROR_NOT_FOUND", cuda.cuModuleGetFunction, mod, "nothing")
    fails("CUDA_ERROR_INVALID_HANDLE", cuda.cuModuleGetFunction, 0x1234, "saxpy")
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuLaunchKernel, saxpy, 1, 1, 1, 32, 1, 1, 0, 0,
          [saxpy_params(2.0, dx, dy, n), 1], None)
    cuda.cuModuleUnload(mod)
    fails("CUDA_ERROR_INVALID_HANDLE", cuda.cuLaunchKernel, saxpy, 1, 1, 1, 32, 1, 1, 0, 0,
          [saxpy_params(2.0, dx, dy, n)], None)


def test_kernel_params_as_c_arrays(ctx):
    """A native caller passes `void *kernelParams[]` or the extra buffer (ints = addresses)."""
    _, saxpy, _ = _load(ctx)
    n = 64
    dx, dy = cuda.cuMemAlloc(4 * n), cuda.cuMemAlloc(4 * n)
    cuda.cuMemsetD32(dx, 0x3F800000, n)                     # 1.0
    blob = ctypes.create_string_buffer(saxpy_params(3.0, dx, dy, n), 32)
    ptrs = (ctypes.c_void_p * 1)(ctypes.addressof(blob))
    cuda.cuLaunchKernel(saxpy, 1, 1, 1, 64, 1, 1, 0, 0, ctypes.addressof(ptrs), None)
    size = ctypes.c_size_t(32)
    extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(blob), 2, ctypes.addressof(size), 0)
    cuda.cuLaunchKernel(saxpy, 1, 1, 1, 64, 1, 1, 0, 0, None, ctypes.addressof(extra))
    assert np.array_equal(cuda.device_array(dy, (n,), np.float32), np.full(n, 0.0, np.float32))


def test_cluster_and_shared_memory_limits(ctx):
    _, saxpy, clus = _load(ctx)                             # clus: __cluster_dims__(2,1,1)
    out = cuda.cuMemAlloc(4 * 4 * 64)
    assert cuda.cuFuncGetAttribute("REQUIRED_CLUSTER_WIDTH", clus) == 2
    fails("CUDA_ERROR_INVALID_CLUSTER_SIZE", cuda.cuLaunchKernel, clus, 3, 1, 1, 64, 1, 1, 256,
          0, [out], None)
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuLaunchKernel, clus, 4, 1, 1, 64, 1, 1, 60000, 0,
          [out], None)                                      # > 48 KiB without the attribute
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuFuncSetAttribute, clus,
          "MAX_DYNAMIC_SHARED_SIZE_BYTES", 227 * 1024 + 1)
    cuda.cuFuncSetAttribute(clus, "MAX_DYNAMIC_SHARED_SIZE_BYTES", 100_000)
    cuda.cuLaunchKernel(clus, 4, 1, 1, 64, 1, 1, 60000, 0, [out], None)
    want = np.arange(64)[None, :] + np.arange(4)[:, None]
    assert np.array_equal(cuda.device_array(out, (4, 64), np.int32), want)
    cfg = cuda.LaunchConfig(grid=(16, 1, 1), block=(32, 1, 1), attrs={"CLUSTER_DIMENSION": (16, 1, 1)})
    p = [saxpy_params(1.0, out, out, 0)]
    fails("CUDA_ERROR_INVALID_CLUSTER_SIZE", cuda.cuLaunchKernelEx, cfg, saxpy, p)
    cuda.cuFuncSetAttribute(saxpy, "NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
    cuda.cuLaunchKernelEx(cfg, saxpy, p)
    cfg.attrs = {"CLUSTER_DIMENSION": (32, 1, 1)}
    fails("CUDA_ERROR_INVALID_CLUSTER_SIZE", cuda.cuLaunchKernelEx, cfg, saxpy, p)
    fails("CUDA_ERROR_INVALID_VALUE", cuda.cuLaunchKernel, saxpy, 1, 1, 1, 2048, 1, 1, 0, 0, p,
          None)


def test_kernel_fault_is_sticky(ctx):
    _, saxpy, _ = _load(ctx)
    dx, dy = cuda.cuMemAlloc(4000), cuda.cuMemAlloc(4000)
    e = fails("CUDA_ERROR_ILLEGAL_ADDRESS", cuda.cuLaunchKernel, saxpy, 8, 1, 1, 256, 1, 1, 0, 0,
              [saxpy_params(1.0, dx, dy, 2048)], None)
    assert e.finding is not None and "outside every mapped buffer" in str(e)
    assert re.search(r"at PTX line \d+ \(ld\.global\.f32", str(e))   # the faulting load
    fails("CUDA_ERROR_ILLEGAL_ADDRESS", cuda.cuMemAlloc, 16)


def test_streams_and_events(ctx):
    _, saxpy, _ = _load(ctx)
    s = cuda.cuStreamCreate(0)
    a, b, untimed = cuda.cuEventCreate(0), cuda.cuEventCreate(0), cuda.cuEventCreate(2)
    fails("CUDA_ERROR_INVALID_HANDLE", cuda.cuEventElapsedTime, a, b)          # not recorded
    d = cuda.cuMemAlloc(4 * 256)
    cuda.cuEventRecord(a, s)
    cuda.cuLaunchKernel(saxpy, 1, 1, 1, 256, 1, 1, 0, s, [saxpy_params(1.0, d, d, 256)], None)
    cuda.cuEventRecord(b, s)
    cuda.cuEventRecord(untimed, s)
    assert cuda.cuEventElapsedTime(a, b) > 0
    fails("CUDA_ERROR_INVALID_HANDLE", cuda.cuEventElapsedTime, a, untimed)
    cuda.cuStreamSynchronize(s)
    cuda.cuStreamDestroy(s)
    fails("CUDA_ERROR_INVALID_HANDLE", cuda.cuStreamSynchronize, s)


def test_libraries_and_kernels(ctx):
    lib = cuda.cuLibraryLoadData(PTX.encode() + b"\0")
    k = cuda.cuLibraryGetKernel(lib, "clus")
    f = cuda.cuKernelGetFunction(k)
    assert cuda.cuFuncGetName(f) == "clus"
    cuda.cuKernelSetAttribute("MAX_DYNAMIC_SHARED_SIZE_BYTES", 1024, k, 0)
    assert cuda.cuKernelGetAttribute("MAX_DYNAMIC_SHARED_SIZE_BYTES", k, 0) == 1024
    out = cuda.cuMemAlloc(4 * 2 * 32)
    cuda.cuLaunchKernel(k, 2, 1, 1, 32, 1, 1, 128, 0, [out], None)   # a CUkernel as CUfunction
    assert cuda.device_array(out, (2, 32), np.int32)[1, 5] == 6
    cuda.cuLibraryUnload(lib)
    fails("CUDA_ERROR_INVALID_HANDLE", cuda.cuLibraryGetKernel, lib, "clus")


def test_module_images(ctx):
    fails("CUDA_ERROR_NO_BINARY_FOR_GPU", cuda.cuModuleLoadData, b"\x7fELF" + bytes(60))
    fails("CUDA_ERROR_INVALID_PTX", cuda.cuModuleLoadData, ".version 8.0\n.target sm_100a\n"
          ".address_size 64\n.visible .entry k() { bogus; }")
    fails("CUDA_ERROR_INVALID_PTX", cuda.cuModuleLoadData,             # as measured on an H200
          PTX.replace(".target sm_100a", ".target sm_90a"))          # for sm_100a PTX
    fails("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", cuda.cuModuleLoadData,
          PTX.replace(".version 9.0", ".version 9.9"))
    cuda.cuModuleLoadData(PTX.replace(".target sm_100a", ".target sm_80"))   # forward compatible
