"""ptxsim.numerics: bit-exact tensor-core arithmetic (see docs/numerics.md).

``mma(a, b, c, *, arch, kind, atype, btype, ctype, dtype, ...)`` -> D bits.
"""
from ptxsim.numerics.engine import mma  # noqa: F401
from ptxsim.numerics.params import ARCH, ARCH_KINDS, KINDS, Params, params  # noqa: F401
