"""Builds of the optional compiled parts; everything else is in pyproject.toml. Both are
optional: without a C compiler (or, for the CUDA shims, without a shared libpython) the install
still succeeds.

- `ptxsim.numerics._fdpa_c` (src/ptxsim/numerics/_fdpa.c): the compiled inner loop; without it
  ptxsim.numerics runs its numpy implementation (same bits, slower; `ptxsim formats` and the
  docs say which one is active: ptxsim.numerics.backend).
- `ptxsim.cuda._libcuda` / `_libcudart` (src/ptxsim/cuda/native/): the stand-ins for
  libcuda.so.1 and libcudart.so.13 that `ptxsim exec` puts in front of an nvcc-built program
  (docs/cudacpp.md), and `_libcute_dsl_runtime`, the stand-in for CuTe DSL's runtime library
  that host code compiled with --enable-tvm-ffi links (docs/cuda.md). They embed this Python, so
  they link libpython; Linux x86-64 / AArch64."""
import os
import platform
import sys
import sysconfig

from setuptools import Extension, setup

FLAGS = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off", "-fno-math-errno",
                                                   "-fno-trapping-math"]
HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE = os.path.join("src", "ptxsim", "cuda", "native")


def _cuda_shims() -> list:
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "aarch64"):
        return []
    libdir = sysconfig.get_config_var("LIBDIR")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED") or not libdir:
        return []                    # a static libpython cannot be embedded by a library
    common = dict(include_dirs=[NATIVE], libraries=["python" + sysconfig.get_config_var(
        "LDVERSION")], library_dirs=[libdir], runtime_library_dirs=[libdir], optional=True,
        extra_compile_args=["-O2", "-fvisibility=hidden"], depends=[
            os.path.join(NATIVE, f) for f in ("shim.c", "cuda_api.h", "cudart_api.h")])
    return [
        Extension("ptxsim.cuda._libcuda", [os.path.join(NATIVE, "cuda_shim.c")],
                  extra_link_args=["-Wl,-soname,libcuda.so.1"], **common),
        Extension("ptxsim.cuda._libcudart", [os.path.join(NATIVE, "cudart_shim.c")],
                  extra_link_args=["-Wl,-soname,libcudart.so.13", "-Wl,--version-script=" +
                                   os.path.join(HERE, NATIVE, "libcudart13.map")], **common),
        Extension("ptxsim.cuda._libcute_dsl_runtime",
                  [os.path.join(NATIVE, "cute_dsl_runtime_shim.c")],
                  extra_link_args=["-Wl,-soname,libcute_dsl_runtime.so"], **dict(
                      common, depends=common["depends"] + [
                          os.path.join(NATIVE, "cute_dsl_runtime_api.h")])),
    ]


setup(ext_modules=[Extension("ptxsim.numerics._fdpa_c", ["src/ptxsim/numerics/_fdpa.c"],
                             extra_compile_args=FLAGS, optional=True)] + _cuda_shims())
