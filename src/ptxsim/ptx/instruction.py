"""One PTX instruction and its typed operands (PTX ISA 4.x "Syntax", 6 "Instruction Operands").

An `Instruction` keeps the qualifiers in source order and answers order-tolerant questions about
them (`has`, `get`, `value`), because compilers emit e.g. `.warpx4.32x128b` as well as
`.32x128b.warpx4`.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field


@dataclass(frozen=True)
class SourceLoc:
    line: int | None = None
    col: int | None = None
    file: str | None = None

    def __str__(self) -> str:
        return ":".join(str(x) for x in (self.file or "<ptx>", self.line, self.col) if x is not None)


# ---------------------------------------------------------------------------------- operands
@dataclass(frozen=True)
class Operand:
    kind = "operand"


@dataclass(frozen=True)
class Register(Operand):
    """A register (`%r1`, `rd`), optionally negated (`!%p`, predicates), minus-prefixed (`-a`,
    video `vmad`), with a component/selector suffix (`%r1.b0`, `%r1.h10`, `%v.x`)."""
    name: str
    selector: str | None = None     # ".b0", ".h10", ".x" ... (without the name)
    negated: bool = False           # !%p
    minus: bool = False             # -%r (vmad)
    kind = "reg"

    def __str__(self) -> str:
        return ("!" if self.negated else "") + ("-" if self.minus else "") + self.name + (self.selector or "")


@dataclass(frozen=True)
class SpecialRegister(Register):
    """A PTX special register (`%tid.x`, `%laneid`, `%clock64`, `%cluster_ctarank`...)."""
    kind = "sreg"


@dataclass(frozen=True)
class Immediate(Operand):
    """An integer or floating-point constant. `raw` keeps the bits as written for the
    0f/0d forms (and the two's-complement of a negative integer in 64 bits)."""
    value: int | float
    text: str
    is_float: bool = False
    raw: int | None = None          # 0fXXXXXXXX -> 32-bit pattern, 0dX{16} -> 64-bit pattern
    width: int | None = None        # 32 for 0f, 64 for 0d, None for integers / decimal floats
    kind = "imm"

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class Vector(Operand):
    """A brace-enclosed vector `{a, b, c}`."""
    elements: tuple
    kind = "vec"

    def __len__(self) -> int:
        return len(self.elements)

    def __str__(self) -> str:
        return "{" + ", ".join(map(str, self.elements)) + "}"


@dataclass(frozen=True)
class Address(Operand):
    """`[base]`, `[base+offset]`, `[imm]`, or a tensor address `[base, {coords}]`."""
    base: str | None
    offset: int = 0
    vector: Vector | None = None
    kind = "addr"

    def __str__(self) -> str:
        s = (self.base or "") + (f"{self.offset:+d}" if self.offset and self.base else
                                 ("" if self.base else str(self.offset)))
        return "[" + s + (", " + str(self.vector) if self.vector else "") + "]"


@dataclass(frozen=True)
class Label(Operand):
    """An identifier that is not a register: a branch target, a variable or a function name,
    optionally with a byte offset (`smem+16`)."""
    name: str
    offset: int = 0
    kind = "label"

    def __str__(self) -> str:
        return self.name + (f"{self.offset:+d}" if self.offset else "")


@dataclass(frozen=True)
class RegisterPair(Operand):
    """`%p|%q` (setp, shfl, elect destinations)."""
    first: Register
    second: Register
    kind = "pair"

    def __str__(self) -> str:
        return f"{self.first}|{self.second}"


@dataclass(frozen=True)
class Group(Operand):
    """A parenthesised operand list (`call (ret), f, (a, b)`)."""
    elements: tuple
    kind = "group"

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.elements)) + ")"


@dataclass(frozen=True)
class Predicate:
    """The guard `@p` / `@!p`."""
    name: str
    negated: bool = False

    def __str__(self) -> str:
        return "@" + ("!" if self.negated else "") + self.name


# ------------------------------------------------------------------------------- instruction
# Mnemonics whose name spans several dot-components. Everything else is `first component`.
COMPOUND_OPCODES = (
    "tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit", "tcgen05.ld",
    "tcgen05.st", "tcgen05.wait", "tcgen05.cp", "tcgen05.shift", "tcgen05.mma", "tcgen05.fence",
    "tcgen05.commit",
    "cp.async.bulk.tensor", "cp.async.bulk.prefetch.tensor", "cp.async.bulk.prefetch",
    "cp.async.bulk.commit_group", "cp.async.bulk.wait_group", "cp.async.bulk",
    "cp.async.mbarrier.arrive", "cp.async.commit_group", "cp.async.wait_group",
    "cp.async.wait_all", "cp.async", "cp.reduce.async.bulk.tensor", "cp.reduce.async.bulk",
    "wgmma.mma_async", "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group",
    "mbarrier.init", "mbarrier.inval", "mbarrier.arrive_drop", "mbarrier.arrive",
    "mbarrier.expect_tx", "mbarrier.complete_tx", "mbarrier.test_wait", "mbarrier.try_wait",
    "mbarrier.pending_count", "barrier.cluster", "fence.proxy", "multimem.ld_reduce",
    "multimem.st", "multimem.red", "clusterlaunchcontrol.try_cancel",
    "clusterlaunchcontrol.query_cancel", "tensormap.replace", "tensormap.cp_fenceproxy",
    "griddepcontrol", "elect", "getctarank", "stmatrix", "ldmatrix", "movmatrix",
)
_COMPOUND = {tuple(c.split(".")): c for c in COMPOUND_OPCODES}
_MAX_COMPOUND = max(len(k) for k in _COMPOUND)

TYPE_NAMES = frozenset(
    ".pred .b8 .b16 .b32 .b64 .b128 .u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 .f16 .f16x2 .bf16 "
    ".bf16x2 .f32 .f64 .tf32 .e4m3 .e5m2 .e2m3 .e3m2 .e2m1 .ue8m0 .ue4m3 .e4m3x2 .e5m2x2 "
    ".e2m3x2 .e3m2x2 .e2m1x2 .ue8m0x2 .u4 .s4 .f32x2 .s2 .u2".split())


def split_mnemonic(token: str) -> tuple[str, tuple[str, ...]]:
    """'tcgen05.wait::ld.sync.aligned' -> ('tcgen05.wait', ('::ld', '.sync', '.aligned'))."""
    parts = token.split(".")
    head = []
    tail: list[str] = []
    # Longest known compound opcode, component names compared without their ::suffix.
    names = [p.split("::", 1)[0] for p in parts]
    n = 1
    for k in range(min(_MAX_COMPOUND, len(parts)), 1, -1):
        if tuple(names[:k]) in _COMPOUND:
            n = k
            break
    head = names[:n]
    last = parts[n - 1]
    if "::" in last:                      # tcgen05.fence::before_thread_sync
        tail.append("::" + last.split("::", 1)[1])
    tail.extend("." + p for p in parts[n:])
    return ".".join(head), tuple(tail)


@dataclass(frozen=True)
class Instruction:
    """One PTX instruction.

    `opcode` is the mnemonic ("tcgen05.mma", "mma", "vadd", "ld"); `qualifiers` the rest of the
    dotted name in source order (".sp", ".cta_group::1", ".kind::f16", ...; a `::x` directly on
    the mnemonic such as `tcgen05.fence::before_thread_sync` is the qualifier "::before_thread_sync").
    """
    opcode: str
    qualifiers: tuple[str, ...]
    operands: tuple = ()
    predicate: Predicate | None = None
    loc: SourceLoc = field(default_factory=SourceLoc)
    text: str = ""

    # -- order-tolerant qualifier queries ----------------------------------------------
    @property
    def mnemonic(self) -> str:
        """The full dotted name as written (opcode + qualifiers in source order)."""
        return self.opcode + "".join(self.qualifiers)

    def has(self, *quals: str) -> bool:
        """True when every qualifier in `quals` is present (in any order)."""
        return all(q in self.qualifiers for q in quals)

    def get(self, prefix: str, default=None):
        """The first qualifier that equals `prefix` or starts with `prefix` + '::'
        (`get(".kind")` -> ".kind::f16"), else `default`."""
        for q in self.qualifiers:
            if q == prefix or q.startswith(prefix + "::"):
                return q
        return default

    def value(self, prefix: str, default=None):
        """The part after `prefix::` (`value(".kind")` -> "f16"), else `default`."""
        q = self.get(prefix)
        if q is None or q == prefix:
            return default
        return q[len(prefix) + 2:]

    def count(self, qual: str) -> int:
        return self.qualifiers.count(qual)

    @property
    def types(self) -> tuple[str, ...]:
        """The type qualifiers (.f32, .b32, .e4m3, ...) in source order."""
        return tuple(q for q in self.qualifiers if q in TYPE_NAMES)

    def __str__(self) -> str:
        ops = ", ".join(map(str, self.operands))
        return (f"{self.predicate} " if self.predicate else "") + self.mnemonic + (" " + ops if ops else "") + ";"


def float_immediate(text: str) -> Immediate:
    """0fXXXXXXXX (f32 bits) / 0dXXXXXXXXXXXXXXXX (f64 bits) / decimal float."""
    if text[:2] in ("0f", "0F"):
        raw = int(text[2:], 16)
        return Immediate(struct.unpack("<f", struct.pack("<I", raw))[0], text, True, raw, 32)
    if text[:2] in ("0d", "0D"):
        raw = int(text[2:], 16)
        return Immediate(struct.unpack("<d", struct.pack("<Q", raw))[0], text, True, raw, 64)
    v = float(text)
    return Immediate(v, text, True, struct.unpack("<Q", struct.pack("<d", v))[0], None)


def int_immediate(text: str) -> Immediate:
    t = text.rstrip("uU")
    neg = t.startswith("-")
    t = t.lstrip("-")
    if t[:2] in ("0x", "0X"):
        v = int(t[2:], 16)
    elif t[:2] in ("0b", "0B"):
        v = int(t[2:], 2)
    elif len(t) > 1 and t.startswith("0"):
        v = int(t, 8)             # PTX: a leading 0 means octal
    else:
        v = int(t)
    v = -v if neg else v
    return Immediate(v, text, False, v & 0xFFFFFFFFFFFFFFFF, None)
