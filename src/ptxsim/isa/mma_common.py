"""What the warp-level MMA families share: the qualifier parser of `mma` / `mma.sp` (PTX ISA
9.7.14.5.14, 9.7.14.6.3) and the form of a PTX ISA / Target ISA note.

`parse(instruction)` reads the qualifiers of any `mma` instruction into `MmaQualifiers` (shape,
layouts, positional types, kind, block scaling, .satfinite, bit operation, sparse variant), in any
order, refusing unknown or repeated ones. `isa.mma_sp.form_of` and `isa.mma_sync.form_of` build
their forms from it; neither reads qualifier strings itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ptxsim.errors import PtxValidationError

# element / accumulator / scale types a warp-level mma names (9.7.14.5.14, 9.7.14.6.3)
TYPES = ("f16", "bf16", "tf32", "f32", "f64", "s32", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1",
         "u8", "s8", "u4", "s4", "b1", "ue8m0", "ue4m3")
SPARSE = (".sp", ".sp::ordered_metadata")
BITOPS = ("xor", "and")
_SHAPE = re.compile(r"^\.m(\d+)n(\d+)k(\d+)$")
_FLAGS = (".sync", ".aligned", ".satfinite", ".block_scale", ".popc")


@dataclass(frozen=True)
class Note:
    """One line of the PTX ISA / Target ISA notes: `what` needs PTX ISA `since` and, when
    `target` is set, the requirement its family module names by that key."""
    what: str
    since: tuple[int, int]
    target: str | None = None


@dataclass(frozen=True)
class MmaQualifiers:
    """The qualifiers of one `mma` instruction, as written (nothing checked against a table)."""
    opcode: str
    sparse: str | None                 # None (dense), ".sp", ".sp::ordered_metadata"
    m: int
    n: int
    k: int
    layouts: tuple[str, ...]           # ("row", "col") in the order written
    types: tuple[str, ...]             # .dtype .atype .btype .ctype (.stype), without dots
    kind: str | None                   # "f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4"
    block_scale: bool
    scale_vec: str | None              # "1X" / "2X" / "4X" as written
    satfinite: bool
    bitop: str | None                  # "xor" / "and" (single-bit mma)
    popc: bool
    sync: bool
    aligned: bool

    @property
    def shape(self) -> str:
        return f"m{self.m}n{self.n}k{self.k}"

    @property
    def text(self) -> str:
        return self.opcode + "".join(self.written)

    written: tuple[str, ...] = ()


def parse(instruction) -> MmaQualifiers:
    """MmaQualifiers of a parsed `mma...` Instruction. Raises PtxValidationError for a qualifier
    no mma form has, for one given twice, and for a missing or repeated shape."""
    quals = tuple(instruction.qualifiers)
    name = f"{instruction.opcode}{''.join(quals)}"
    seen = set()
    shapes, layouts, types, kinds, vecs, sparse, bitops = [], [], [], [], [], [], []
    for q in quals:
        if q in seen and q[1:] not in TYPES and q not in (".row", ".col"):
            raise PtxValidationError(f"'{name}': qualifier {q} is given twice")
        seen.add(q)
        if (m := _SHAPE.match(q)):
            shapes.append(tuple(int(x) for x in m.groups()))
        elif q in (".row", ".col"):
            layouts.append(q[1:])
        elif q[1:] in TYPES:
            types.append(q[1:])
        elif q.startswith(".kind::"):
            kinds.append(q.split("::", 1)[1])
        elif q.startswith(".scale_vec::"):
            vecs.append(q.split("::", 1)[1])
        elif q in SPARSE:
            sparse.append(q)
        elif q[1:] in BITOPS:
            bitops.append(q[1:])
        elif q not in _FLAGS:
            raise PtxValidationError(f"'{name}': unknown qualifier {q} for mma (PTX ISA 9.7.14.5.14)")
    for what, got in (("shape", shapes), ("kind", kinds), (".scale_vec_size", vecs),
                      ("sparse variant", sparse), ("bit operation", bitops)):
        if len(got) > 1:
            raise PtxValidationError(f"'{name}': more than one {what} qualifier")
    if not shapes:
        raise PtxValidationError(f"'{name}': mma needs a .mMnNkK shape qualifier")
    m, n, k = shapes[0]
    return MmaQualifiers(
        opcode=instruction.opcode, sparse=sparse[0] if sparse else None, m=m, n=n, k=k,
        layouts=tuple(layouts), types=tuple(types), kind=kinds[0] if kinds else None,
        block_scale=".block_scale" in quals, scale_vec=vecs[0] if vecs else None,
        satfinite=".satfinite" in quals, bitop=bitops[0] if bitops else None,
        popc=".popc" in quals, sync=".sync" in quals, aligned=".aligned" in quals, written=quals)
