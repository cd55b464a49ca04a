"""ptxsim as a CUDA device: a model of the CUDA driver API (docs/cuda.md).

    from ptxsim import cuda
    cuda.cuInit(0)
    ctx = cuda.cuDevicePrimaryCtxRetain(0); cuda.cuCtxSetCurrent(ctx)
    d = cuda.cuMemAlloc(4096)
    mod = cuda.cuModuleLoadData(open("k.ptx").read())
    f = cuda.cuModuleGetFunction(mod, "k")
    cuda.cuLaunchKernel(f, 4, 1, 1, 128, 1, 1, 0, 0, [d, 1024], None)

Every call raises `ptxsim.errors.CudaError` (CUresult name, call, reason) where the driver
returns an error. `ptxsim.cuda.bindings` is the same model shaped like cuda-python's
`cuda.bindings.driver` (tuples of (CUresult, values...)).
"""
from ptxsim.cuda import driver as _driver
from ptxsim.cuda.devices import DEVICES, DeviceSpec
from ptxsim.cuda.driver import (CUtensorMap, LaunchConfig, configure, device_array,
                                kernel_params, register_image, reset, state)
from ptxsim.cuda.enums import CURESULT
from ptxsim.errors import CudaError

def native_path(library: str) -> str | None:
    """The path of ptxsim's stand-in for libcuda.so.1 (`library="cuda"`), libcudart.so.13
    (`"cudart"`) or CuTe DSL's libcute_dsl_runtime.so (`"cute_dsl_runtime"`), built by `pip install` when a C compiler and a shared libpython are there
    (docs/cudacpp.md); None when it was not built."""
    import glob
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, f"_lib{library}.*so")))
    return found[0] if found else None


API = sorted(n for n, v in vars(_driver).items() if getattr(v, "cuda_api", False))
globals().update({n: getattr(_driver, n) for n in API})

__all__ = API + ["CUtensorMap", "LaunchConfig", "configure", "device_array", "kernel_params",
                 "register_image", "reset", "state", "DEVICES", "DeviceSpec", "CURESULT",
                 "CudaError", "native_path"]
