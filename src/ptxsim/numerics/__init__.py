"""ptxsim.numerics: bit-exact tensor-core arithmetic (see docs/numerics.md).

``mma(a, b, c, *, arch, kind, atype, btype, ctype, dtype, ...)`` -> D bits;
``mma_batch(a, b, c, ...)``: T independent MMAs of one form, leading batch axis;
``mma_sparse(a_stored, b_rows, c, ...)``: sparse MMA, a B row selection per output row.
"""
from ptxsim.numerics.engine import mma, mma_batch, mma_sparse  # noqa: F401
from ptxsim.numerics.params import ARCH, ARCH_KINDS, KINDS, Params, params  # noqa: F401
