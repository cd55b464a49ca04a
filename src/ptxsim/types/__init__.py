"""Element formats: bits <-> values, containers, PTX cvt rounding rules."""
from ptxsim.types.formats import FORMATS, Format, get_format  # noqa: F401
from ptxsim.types.rules import CVT_RULES, ROUNDINGS, CvtRule, check_cvt  # noqa: F401
from ptxsim.types.codec import decode, encode, storage_dtype  # noqa: F401
