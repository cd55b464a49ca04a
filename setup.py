"""Build of the optional compiled inner loop (src/ptxsim/numerics/_fdpa.c); everything else is
in pyproject.toml.  The extension is optional: without a C compiler the install still succeeds
and ptxsim.numerics runs its numpy implementation (same bits, slower; `ptxsim formats` and the
docs say which one is active: ptxsim.numerics.backend)."""
import sys

from setuptools import Extension, setup

FLAGS = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off", "-fno-math-errno",
                                                   "-fno-trapping-math"]

setup(ext_modules=[Extension("ptxsim.numerics._fdpa_c", ["src/ptxsim/numerics/_fdpa.c"],
                             extra_compile_args=FLAGS, optional=True)])
