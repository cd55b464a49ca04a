"""Element formats: bits <-> values, containers, PTX cvt rounding rules."""
from ptxsim.types.formats import FORMATS, Format, get_format  # noqa: F401
