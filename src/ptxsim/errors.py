"""The ptxsim error hierarchy.

Every mistake a user can make (malformed PTX, an illegal descriptor, a bad operand, an access the
hardware would get wrong) ends in one of these, with the location and a sentence that says why.
"""
from __future__ import annotations


class PtxsimError(Exception):
    """Base class of every error ptxsim raises on purpose."""


class FormatError(PtxsimError, ValueError):
    """An element format name, container, dtype or bit pattern that does not fit (types/)."""


class OperandError(PtxsimError, ValueError):
    """An operand of the wrong shape, dtype, width or value for an instruction."""


class PtxSyntaxError(PtxsimError):
    """PTX text that does not parse."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None,
                 file: str | None = None):
        self.message, self.line, self.col, self.file = message, line, col, file
        where = ":".join(str(x) for x in (file or "<ptx>", line, col) if x is not None)
        super().__init__(f"{where}: error: {message}")


class PtxValidationError(PtxSyntaxError):
    """PTX that parses but is illegal (qualifiers, operands, target, PTX version)."""


class DescriptorError(PtxsimError, ValueError):
    """A field of an instruction / shared-memory / zero-column-mask descriptor is illegal."""

    def __init__(self, field: str, value, why: str, descriptor: str | None = None):
        self.field, self.value, self.why, self.descriptor = field, value, why, descriptor
        prefix = f"{descriptor}: " if descriptor else ""
        shown = hex(value) if isinstance(value, int) and not isinstance(value, bool) else repr(value)
        super().__init__(f"{prefix}field '{field}' = {shown}: {why}")


class LayoutError(PtxsimError, ValueError):
    """A shared-memory / Tensor Memory layout that cannot hold the requested matrix."""


class TmemAccessError(PtxsimError):
    """An access to Tensor Memory the hardware would not perform correctly."""

    def __init__(self, why: str, warp: int | None = None, lane: int | None = None,
                 column: int | None = None):
        self.warp, self.lane, self.column, self.why = warp, lane, column, why
        where = ", ".join(f"{k} {v}" for k, v in (("warp", warp), ("lane", lane), ("column", column))
                          if v is not None)
        super().__init__(f"{why}" + (f" ({where})" if where else ""))


class TmemAllocError(PtxsimError):
    """tcgen05.alloc / dealloc / relinquish_alloc_permit misuse, or columns leaked at exit."""


class UndefinedBehavior(PtxsimError):
    """Something the PTX specification calls undefined. ptxsim refuses to invent a result."""


class ExecutionError(PtxsimError):
    """A runtime failure of a kernel (bad address, unsupported instruction at run time)."""


class TrapError(ExecutionError):
    """The kernel executed `trap` (or faulted as the hardware would)."""


class DeadlockError(ExecutionError):
    """Every live warp waits and nothing can wake it."""


class MmaTypeError(OperandError):
    """An (arch, kind, element type, scale type, block size) combination no MMA instruction has."""
