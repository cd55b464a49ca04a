"""The ptxsim error hierarchy.

Every mistake a user can make (malformed PTX, an illegal descriptor, a bad operand, an access the
hardware would get wrong) ends in one of these, with the location and a sentence that says why.
"""
from __future__ import annotations


class PtxsimError(Exception):
    """Base class of every error ptxsim raises on purpose."""


# The instruction whose semantics run now: set by the executor for each step (and by the
# asynchronous proxy while an operation completes, to the text of the instruction that issued
# it), None outside a launch. The lower layers (isa, numerics) know no PTX line; a warning they
# give during a launch is prefixed by "line N: <instruction>" (LocatedWarning).
CURRENT: list = [None]


def current_location() -> str | None:
    w = CURRENT[0]
    if w is None:
        return None
    return w if isinstance(w, str) else f"line {w.loc.line}: {w}"


class LocatedWarning(UserWarning):
    """A warning that names the PTX line of the instruction being run when it was made (see
    CURRENT), unless its text starts with a line already."""

    def __init__(self, *args):
        if args and isinstance(args[0], str) and not args[0].startswith("line "):
            here = current_location()
            if here:
                args = (f"{here}: {args[0]}",) + tuple(args[1:])
        super().__init__(*args)


class InputError(PtxsimError, ValueError):
    """A file, command-line argument or API argument ptxsim cannot use: it names the argument
    and says what was expected."""


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


class TmemAllocBlocked(TmemAllocError):
    """tcgen05.alloc would block forever: the requested columns never become free."""


class TmemLeakError(TmemAllocError):
    """Tensor Memory columns still allocated when the kernel exits (9.7.16.7.1)."""

    def __init__(self, message: str, leaks=None, cta: int | None = None):
        self.leaks, self.cta = list(leaks or []), cta
        super().__init__(message)


class CtaGroupMismatch(UndefinedBehavior):
    """tcgen05 instructions of one kernel using different .cta_group values (9.7.16.7.1)."""


# --- warp-level mma.sp (isa/mma_sp.py) --------------------------------------------------------
class SparsityMetadataError(UndefinedBehavior):
    """Sparsity metadata the PTX spec calls undefined (9.7.14.6.1): a repeated index in a chunk,
    an index pair that is not increasing under .sp::ordered_metadata, or a tf32 index other than
    0b0100 / 0b1110."""

    def __init__(self, why: str, warp: int | None = None, lane: int | None = None,
                 row: int | None = None, chunk: int | None = None):
        self.why, self.warp, self.lane, self.row, self.chunk = why, warp, lane, row, chunk
        where = ", ".join(f"{k} {v}" for k, v in (("warp", warp), ("lane", lane), ("row", row),
                                                  ("chunk", chunk)) if v is not None)
        super().__init__(why + (f" ({where})" if where else ""))


class IllegalInstructionError(TrapError):
    """An instruction that assembles but that the GPU rejects at run time with an
    illegal-instruction fault (e.g. FACTS §5: mma.sp m16n8k32 f16 with selector 2 or 3)."""


class TrapExecuted(TrapError):
    """`trap` executed by the named threads (9.7.19.4): the kernel aborts. `threads` holds their
    indices in the launch (32*warp + lane)."""

    def __init__(self, message: str, threads=()):
        self.threads = tuple(int(t) for t in threads)
        super().__init__(message)


class DeviceAssertion(TrapExecuted):
    """A device-side `assert` failed: the kernel called `__assertfail` (CUDA's assert; nvcc 13.0
    output), printed `file:line: function: block: [..], thread: [..] Assertion `expr` failed.`
    and aborted, as the GPU does; the host's next call returns cudaErrorAssert /
    CUDA_ERROR_ASSERT (sticky). `messages` holds the printed lines."""

    cuda_result = "CUDA_ERROR_ASSERT"

    def __init__(self, message: str, threads=(), messages=()):
        self.messages = list(messages)
        super().__init__(message, threads)


class BreakpointTrap(TrapExecuted):
    """`brkpt` executed with no debugger attached: the hardware aborts the kernel as for `trap`
    (H200: both compile to BPT.TRAP and end in 'unspecified launch failure'; docs/misc.md)."""


class SetmaxnregIgnored(PtxsimError, LocatedWarning):
    """setmaxnreg in a kernel whose register count at entry is unknown: it has no effect
    (9.7.19.5; ptxas 13.0 drops it with info C7508 / C7504)."""


# --- tcgen05.mma (isa/tcgen05_mma.py) ----------------------------------------------------------
class CollectorBufferError(UndefinedBehavior):
    """A .collector::*::use / ::lastuse without a live fill of that buffer, or whose operand is
    not the one filled (9.7.16.10: reuse is opportunistic, so both must give the same bits)."""


# --- kernel executor machine (src/ptxsim/machine) -------------------------------------------
class MemoryAccessError(ExecutionError):
    """A load / store the hardware would fault on: outside every mapped buffer or window of its
    state space, or misaligned. Names the address, the space and the nearest buffer."""

    def __init__(self, why: str, address: int | None = None, space: str | None = None,
                 thread: int | None = None):
        self.why, self.address, self.space, self.thread = why, address, space, thread
        where = ", ".join(f"{k} {v}" for k, v in (
            ("space", space), ("address", hex(address) if address is not None else None),
            ("thread", thread)) if v is not None)
        super().__init__(f"{why}" + (f" ({where})" if where else ""))


class MisalignedAddress(MemoryAccessError):
    """An address not aligned to the access size (PTX 6.4.1: undefined; the hardware faults)."""


class LaunchConfigError(OperandError):
    """Grid, block or cluster dimensions (or shared-memory sizes) no B200 launch accepts."""


class TensorMapError(OperandError):
    """A cuTensorMapEncodeTiled parameter the CUDA driver refuses (CUDA_ERROR_INVALID_VALUE)."""

    def __init__(self, field: str, value, why: str):
        self.field, self.value, self.why = field, value, why
        super().__init__(f"tensor map: {field} = {value!r}: {why}")


class TensorCopyError(UndefinedBehavior):
    """A tensor copy the PTX ISA's restrictions do not allow for its tensor map (9.7.9.25.5.1,
    e.g. a packed sub-byte type in a direction, box, coordinate or swizzle it does not support);
    the message names the rule."""


class MbarrierError(UndefinedBehavior):
    """Misuse of an mbarrier object that the PTX ISA leaves undefined (9.7.13.15)."""

    def __init__(self, why: str, address: int | None = None, cta: int | None = None):
        self.why, self.address, self.cta = why, address, cta
        where = ", ".join(f"{k} {v}" for k, v in (
            ("mbarrier", hex(address) if address is not None else None), ("cta", cta))
            if v is not None)
        super().__init__(f"{why}" + (f" ({where})" if where else ""))


class BarrierError(UndefinedBehavior):
    """bar / barrier / barrier.cluster misuse the PTX ISA leaves undefined (9.7.13.1, 9.7.13.3)."""


class AsyncProxyError(UndefinedBehavior):
    """Asynchronous-proxy misuse: waiting on or committing operations in a way 9.7.16.6 leaves
    undefined."""


class UnsupportedFeature(PtxsimError, NotImplementedError):
    """A legal feature ptxsim does not model yet; named so that no result is silently invented."""


class StepLimitExceeded(ExecutionError):
    """The launch ran more warp instructions than its step guard allows (a runaway loop?)."""


class StackOverflowError(ExecutionError):
    """alloca asked for more than the thread's remaining stack (9.7.17.3)."""

    def __init__(self, thread: int, requested: int, available: int):
        self.thread, self.requested, self.available = thread, requested, available
        super().__init__(f"alloca overflows the stack of thread {thread}: {requested} bytes "
                         f"(with alignment) requested, {available} available")


class MmaTypeError(OperandError):
    """An (arch, kind, element type, scale type, block size) combination no MMA instruction has."""


class LayoutAssumptionWarning(LayoutError, LocatedWarning):
    """A Tensor Memory placement ptxsim computes from a plausible rule that no source confirms for
    this shape (docs/tmem.md, 'Deviations'); raised as a warning so the result is never silent.
    Turn it into an error with warnings.simplefilter('error', LayoutAssumptionWarning)."""


class TargetError(PtxValidationError, OperandError):
    """A target name (`sm_100a`) or PTX ISA version that ptxsim cannot parse, or one outside the
    list an operation accepts (ptxsim.isa.targets)."""


class VideoOperandIgnored(PtxsimError, LocatedWarning):
    """A scalar video instruction has a third source operand c but neither .op2 nor a d.dsel
    merge: ptxas accepts it and the hardware ignores c (H200-measured, docs/video.md)."""


class FloatEnvironmentError(PtxsimError, RuntimeError):
    """The host's floating-point environment cannot give exact results: e.g. the x86 MXCSR
    flush-to-zero / denormals-are-zero bits are set in this thread (code built with -ffast-math
    does that when it is loaded), so subnormal results would silently become zero."""


class UnlistedFormWarning(PtxsimError, LocatedWarning):
    """ptxas accepts the form but the PTX ISA does not list it, and the H200 binary ptxas makes
    of it computes something else than the spec's operation (e.g. fma.rz.bf16: the ISA lists
    only .rn; measured results follow neither bf16 rounding); ptxsim's number is the spec's
    operation with the named rounding, not the hardware's."""


class PoisonValueError(UndefinedBehavior):
    """A value the PTX ISA leaves unspecified (an integer division by zero, `mapa` to a rank
    outside the cluster, the ctaid of a failed `clusterlaunchcontrol.try_cancel`, ...) was used
    for an address, a branch, a store or another instruction with an effect outside the
    registers. Computing such a value is not an error (real kernels compute and discard them);
    using it is. Names the line that produced the value and the line that used it; `chain`:
    the way from the one to the other, (line, instruction, why) per step, the producer first
    (a load through an unspecified address passes the unspecified value on to its data)."""

    def __init__(self, why: str, *, produced_line: int | None = None,
                 produced: str = "", used_line: int | None = None, used: str = "",
                 use: str = "", thread: int | None = None, chain: tuple = ()):
        self.produced_line, self.produced = produced_line, produced
        self.used_line, self.used, self.use, self.thread = used_line, used, use, thread
        self.chain = tuple(chain)
        super().__init__(why)


class SpecDeviationWarning(PtxsimError, LocatedWarning):
    """Production code relies on hardware behaviour the PTX ISA text forbids (DeepGEMM's
    tcgen05.ld lane field 0 from every epilogue warp, ThunderKittens' generic address to
    tcgen05.alloc.shared::cta, ...). ptxsim runs it as the hardware does and warns, naming the
    line and the rule; `warnings.simplefilter("error", SpecDeviationWarning)` refuses instead."""


class UnexecutableInstructionWarning(PtxsimError, UserWarning):
    """`ptxsim check`: the instruction is valid PTX but the executor has no semantics for it
    (a launch that reaches it stops with ExecutionError / UnsupportedFeature)."""


# --- the CUDA driver API model (ptxsim.cuda) --------------------------------------------------
class CudaError(PtxsimError):
    """A CUDA driver call that fails as the driver would: `result` is the CUresult name
    (CUDA_ERROR_INVALID_VALUE), `code` its number, `call` the call with its arguments, `why` the
    sentence. A kernel that faults raises one whose `finding` (and __cause__) is ptxsim's error
    with the PTX line."""

    def __init__(self, result: str, code: int, call: str, why: str, finding=None):
        self.result, self.code, self.call, self.why, self.finding = result, code, call, why, finding
        super().__init__(f"{call}: {result}: {why}")


# --- scale-out (src/ptxsim/distributed) -------------------------------------------------------
class MergeConflict(ExecutionError):
    """A launch split across workers (ptxsim.distributed) whose parts cannot be merged into the
    one-process result: two workers wrote one global byte with different values, or one global
    address was the target of atomics in one worker and written or atomically updated in
    another. Names the buffer, the offset and the two workers' waves."""

    def __init__(self, why: str, buffer: str | None = None, offset: int | None = None,
                 address: int | None = None, workers: tuple | None = None):
        self.why, self.buffer, self.offset = why, buffer, offset
        self.address, self.workers = address, workers
        super().__init__(why)


class WorkerError(ExecutionError):
    """A worker process of a distributed launch or farm ended without a result (killed,
    crashed, or its result could not be sent back)."""


class FarmSpecError(OperandError):
    """A farm specification (JSON / TOML file or dict) that cannot be turned into launches:
    names the file, the entry and the key."""


class OneWorkerWarning(PtxsimError, UserWarning):
    """A launch asked for several workers runs in one: its kernel uses clusterlaunchcontrol or
    reads %clock / %globaltimer, whose values depend on every earlier wave (ptxsim.distributed)."""


class KernelFault(ExecutionError):
    """A kernel launched through a front door (ptxsim.triton) failed in ptxsim: the message names
    the PTX line and, from the PTX `.loc` debug lines, the source line that produced it.
    `cause` is the ptxsim error underneath; `ptx_line` / `source` (file, line, column) are None
    where unknown."""

    def __init__(self, message: str, cause: Exception | None = None, ptx_line: int | None = None,
                 source: tuple | None = None):
        self.cause, self.ptx_line, self.source = cause, ptx_line, source
        super().__init__(message)
