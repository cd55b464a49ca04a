"""Element formats: bits <-> values, containers, PTX cvt rounding rules."""
from ptxsim.types.formats import FORMATS, Format, get_format  # noqa: F401
from ptxsim.types.rules import CVT_RULES, ROUNDINGS, CvtRule, check_cvt  # noqa: F401
from ptxsim.types.codec import decode, encode, storage_dtype  # noqa: F401
from ptxsim.types.containers import (  # noqa: F401
    F8F6F4_PLACEMENT, from_f8f6f4_container, pack_b32, pack_cvt_x2, pack_fp4_pairs,
    to_f8f6f4_container, unpack_b32, unpack_cvt_x2, unpack_fp4_pairs)
