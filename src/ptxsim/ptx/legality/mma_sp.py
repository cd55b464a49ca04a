"""Legality of warp-level `mma.sp` / `mma.sp::ordered_metadata`, transcribed from PTX ISA
9.7.14.6.3 (shared/spec/mma-sp-warp-level.md). Dense `mma` (no .sp) is left to ptxas-level
generic parsing: it is outside the spec texts this project holds."""
from __future__ import annotations

from ptxsim.isa import mma_sp as isa
from ptxsim.isa.mma_sp import REQUIREMENTS
from ptxsim.ptx.legality.common import Check, Slot
from ptxsim.ptx.legality.matrix import dense_mma

S = "9.7.14.6.3"

# Target ISA notes: the one table is isa/mma_sp.py's (LEGAL rows and their Notes, REQUIREMENTS).
SM80 = REQUIREMENTS["sm_80"]
SM89 = REQUIREMENTS["sm_89"]
SM120 = REQUIREMENTS["sm_120f"]
SM120AF = REQUIREMENTS["sm_120f"]
SM120A_121A = REQUIREMENTS["sm_120a"]

# The qualifier vocabulary, read off the isa table.
SHAPES = tuple(f".m16n8k{k}" for k in sorted({k for r in isa.LEGAL for k in r.shapes}))
KINDS = tuple(f".kind::{r.kind}" for r in isa.LEGAL if r.kind)
SCALE_VECS = tuple(f".scale_vec::{v}" for v in
                   sorted({v for r in isa.LEGAL for _, v in r.scales}))
TYPES = {"." + t for t in isa.TYPES}
# Table 36 (block scaling for mma): kind -> {scale_vec_size: stypes}; None = qualifier omitted
# (isa.DEFAULT_SCALE_VEC says what it means).
SCALE = {}
for _r in isa.LEGAL:
    for _stype, _vec in _r.scales:
        _by_vec = SCALE.setdefault(f".kind::{_r.kind}", {})
        _keys = [f".scale_vec::{_vec}"] + ([None] if isa.DEFAULT_SCALE_VEC.get(_r.kind) == _vec else [])
        for _key in _keys:
            _by_vec.setdefault(_key, set()).add("." + _stype)


# A read-only view in the old row shape, derived from isa.LEGAL (tests/ptx/test_ptxas_corpus.py
# walks it): (shape, dtypes, atypes, btypes, ctypes, spvariants, kind, A regs, B regs, max f).
ROWS = [(f".m16n8k{k}", {"." + x for x, _ in r.accum}, {"." + t for t in r.ab_types},
         {"." + t for t in r.ab_types}, {"." + y for _, y in r.accum}, set(r.variants),
         f".kind::{r.kind}" if r.kind else None,
         *(lambda f: (f[0], f[1], f[2].stop - 1))(isa.shape_facts(k, r.ab_types[0], r.kind)))
        for r in isa.LEGAL for k in r.shapes]


def _row(shape: str, kind, d: str, a: str, b: str, cc: str):
    """The LEGAL row of this shape, kind and types (d and c each among the row's accumulators;
    their equality is a rule of its own)."""
    if shape is None:
        return None
    k = int(shape[len(".m16n8k"):])
    kind = kind[len(".kind::"):] if kind else None
    for r in isa.LEGAL:
        if (r.kind == kind and k in r.shapes and a[1:] in r.ab_types and b[1:] in r.ab_types
                and d[1:] in {x for x, _ in r.accum} and cc[1:] in {y for _, y in r.accum}):
            return r
    return None


def mma(c: Check) -> None:
    if not (c.i.get(".sp") or c.i.get(".sp::ordered_metadata")):
        dense_mma(c)                    # isa.mma_sync's table (9.7.14.5.14)
        return
    c.name = "mma.sp"
    types = [q for q in c.i.qualifiers if q in TYPES]
    rest = [q for q in c.i.qualifiers if q not in TYPES]
    # the non-type qualifiers are order-free; the types are positional (d, a, b, c {, s})
    sub = Check(type(c.i)(c.i.opcode, tuple(rest), c.i.operands, c.i.predicate, c.i.loc), c.ctx, c.out, "mma.sp")
    q = sub.slots([Slot.of(".spvariant", isa.BOTH, True), Slot.of(".sync", ".sync", True),
                   Slot.of(".aligned", ".aligned", True), Slot.of(".shape", SHAPES, True),
                   Slot.of(".alayout", ".row", True), Slot.of(".blayout", ".col", True),
                   Slot.of(".satfinite", ".satfinite"), Slot.of(".kind", KINDS),
                   Slot.of(".block_scale", ".block_scale"),
                   Slot.of(".scale_vec_size", SCALE_VECS)], S)
    c.failed |= sub.failed
    if q[".alayout"] and q[".blayout"] and rest.index(".row") > rest.index(".col"):
        c.err(f"mma.sp layout must be .row.col (A row-major, B column-major) ({S})")
    spv, shape, kind, bs, svs = q[".spvariant"], q[".shape"], q[".kind"], q[".block_scale"], q[".scale_vec_size"]
    block = kind in SCALE
    ntypes = 5 if block else 4
    if len(types) != ntypes:
        c.err(f"mma.sp takes {ntypes} type qualifiers (.dtype.atype.btype.ctype"
              f"{'.stype' if block else ''}), got {len(types)} ({S})")
        return
    d, a, b, cc = types[:4]
    row = _row(shape, kind, d, a, b, cc)
    if row is None:
        c.err(f"mma.sp does not support {shape}{kind or ''} with types "
              f"{d}{a}{b}{cc} ({S})")
        return
    if spv not in row.variants:
        c.err(f"{shape}{kind or ''}{d}{a}{b}{cc} requires .sp::ordered_metadata, not {spv} ({S})")
    if d != cc:
        c.err(f"mma.sp with {shape}: .dtype ({d}) must be the same as .ctype ({cc}) ({S})")
    if q[".satfinite"] and not row.satfinite:
        c.err(f".satfinite is only valid for integer mma.sp ({S})")
    if block != bool(bs):
        c.err(f"{kind} requires .block_scale" if block else f".block_scale requires a block-scaled .kind ({S})")
    if svs and not block:
        c.err(f"{svs} requires .block_scale with .kind::mxf4 / .kind::mxf4nvf4 / .kind::mxf8f6f4 ({S})")
    if block:
        allowed = SCALE[kind]
        if svs not in allowed:
            c.err(f"{kind} cannot be combined with {svs or 'no .scale_vec_size'} (Table 36)")
        elif types[4] not in allowed[svs]:
            c.err(f"{kind} with {svs or 'the default scale vector size'} requires .stype "
                  f"{' or '.join(sorted(allowed[svs]))}, got {types[4]} (Table 36)")
    # operands: d, a, b, c, e, f {, scale-a-data, {byte-id-a, thread-id-a}, scale-b-data, {...}}
    # register counts and selector range: the fragment layouts (isa.shape_facts)
    a_regs, b_regs, selectors = isa.shape_facts(int(shape[len(".m16n8k"):]), a[1:], row.kind)
    dregs = 2 if d == ".f16" else 4
    nops = 10 if block else 6
    if c.count(nops):
        for k, (what, n) in enumerate((("d", dregs), ("a", a_regs), ("b", b_regs), ("c", dregs))):
            if c.operand(k, "vec", what):
                c.vector(k, n, what)
        c.operand(4, "r32|bits32", "e (sparsity metadata)")   # ptxas 13.5 takes a constant
        if c.operand(5, "imm", "f (sparsity selector)"):
            c.imm_range(5, 0, selectors.stop - 1, f"sparsity selector for {shape}{a}", S)
        if block:
            for k, what in ((6, "scale-a-data"), (8, "scale-b-data")):
                c.operand(k, "r32", what)
            for k, what in ((7, "{byte-id-a, thread-id-a}"), (9, "{byte-id-b, thread-id-b}")):
                if c.operand(k, "vec", what) and len(c.i.operands[k]) != 2:
                    c.err(f"operand {k + 1} {what} of mma.sp must have 2 elements, "
                          f"got {len(c.i.operands[k])} ({S})")
    # advisory (Notes): ".sp may have substantially reduced performance ... use .sp::ordered_metadata"
    if spv == ".sp":
        c.warn("mma.sp may have substantially reduced performance on some targets; "
               "mma.sp::ordered_metadata is advised (9.7.14.6.3 Notes)")
    # PTX ISA and Target ISA notes of the row (isa.notes_of)
    stype = types[4][1:] if block else None
    vec = (svs[len(".scale_vec::"):] if svs else isa.DEFAULT_SCALE_VEC.get(row.kind)) if block else None
    notes = isa.notes_of(row, spv == ".sp::ordered_metadata", stype, vec)
    for note in notes:
        c.since(note.since, note.what, S)
    for note in notes:
        if note.target:
            c.target(REQUIREMENTS[note.target], note.what, S)


RULES = {"mma": mma}
