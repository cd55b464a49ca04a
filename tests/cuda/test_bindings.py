"""ptxsim.cuda through cuda-python's calling convention (ptxsim.cuda.bindings): (CUresult,
outputs...) with cuda-python's own types; calls the model lacks answer NOT_SUPPORTED by name."""
from pathlib import Path

import numpy as np
import pytest

drv = pytest.importorskip("cuda.bindings.driver")

from ptxsim import cuda  # noqa: E402
from ptxsim.cuda import bindings  # noqa: E402

PTX = (Path(__file__).parents[1] / "data" / "ptx" / "cuda" / "driver_kernels.ptx").read_bytes()


@pytest.fixture
def routed():
    cuda.configure(["b200"])
    bindings.install()
    yield
    bindings.uninstall()
    cuda.configure(["b200"])


def test_driver_calls_in_cuda_python_form(routed):
    ok = drv.CUresult.CUDA_SUCCESS
    assert drv.cuInit(0) == (ok,)
    err, dev = drv.cuDeviceGet(0)
    assert err == ok
    assert drv.cuDeviceGetAttribute(
        drv.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == (ok, 148)
    err, ctx = drv.cuDevicePrimaryCtxRetain(dev)
    assert isinstance(ctx, drv.CUcontext)
    assert drv.cuCtxSetCurrent(ctx) == (ok,)
    err, mod = drv.cuModuleLoadData(PTX)
    err, f = drv.cuModuleGetFunction(mod, b"clus")
    assert isinstance(f, drv.CUfunction)
    err, d = drv.cuMemAlloc(4 * 64 * 2)
    assert err == ok and isinstance(d, drv.CUdeviceptr)
    # kernelParams as cuda-python's ((values), (ctypes types)) with None = a cuda-python object
    assert drv.cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 256, 0, ((d,), (None,)), 0) == (ok,)
    out = np.zeros((2, 64), np.int32)
    assert drv.cuMemcpyDtoH(out, d, out.nbytes) == (ok,)
    assert np.array_equal(out, np.arange(64)[None] + np.arange(2)[:, None])
    # failures come back as the CUresult, outputs None
    assert drv.cuModuleGetFunction(mod, b"nope") == (drv.CUresult.CUDA_ERROR_NOT_FOUND, None)
    assert drv.cuMemFree(d) == (ok,)
    assert drv.cuMemFree(d) == (drv.CUresult.CUDA_ERROR_INVALID_VALUE,)


def test_unmodelled_calls_say_so(routed):
    drv.cuInit(0)
    with pytest.warns(UserWarning, match="cuGraphCreate"):
        err, _ = drv.cuGraphCreate(0)
    assert err == drv.CUresult.CUDA_ERROR_NOT_SUPPORTED


def test_uninstall_restores_cuda_python():
    cuda.configure(["b200"])
    before = drv.cuInit
    bindings.install()
    assert drv.cuInit is not before
    bindings.uninstall()
    assert drv.cuInit is before
