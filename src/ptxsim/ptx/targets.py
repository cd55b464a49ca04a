"""Target names, PTX ISA versions and the Target ISA Notes vocabulary, for the front end.

The single source of truth is `ptxsim.isa.targets` (the isa/ families need the same rules and must
not depend on the parser package); this module only re-exports it under the names the validator
and its legality tables use.
"""
from ptxsim.isa.targets import (ANY, LATEST_PTX, RENAMED, TARGET_MIN_PTX, TCGEN05,  # noqa: F401
                                TCGEN05_I8, AnyOfFamily, Arch, AtLeast, Family, Req, Target,
                                compatible, family_of, parse_target, parse_version, vstr)
