"""Legality of warp-level `mma.sp` / `mma.sp::ordered_metadata`, transcribed from PTX ISA
9.7.14.6.3 (shared/spec/mma-sp-warp-level.md). Dense `mma` (no .sp) is left to ptxas-level
generic parsing: it is outside the spec texts this project holds."""
from __future__ import annotations

from ptxsim.ptx.legality.common import Check, Slot
from ptxsim.isa.mma_sp import REQUIREMENTS

S = "9.7.14.6.3"
F8 = {".e4m3", ".e5m2"}
F8F6F4 = {".e4m3", ".e5m2", ".e3m2", ".e2m3", ".e2m1"}


# Target ISA notes: the one table is isa/mma_sp.py's REQUIREMENTS (ptxsim.isa.targets vocabulary).
SM80 = REQUIREMENTS["sm_80"]
SM89 = REQUIREMENTS["sm_89"]
# ".f16 dtype/ctype with .e4m3/.e5m2 requires sm_120": ptxas 13.0 takes it on sm_120a/f and
# sm_121a/f but rejects plain sm_120 / sm_121 ("not supported on .target 'sm_120'").
SM120 = REQUIREMENTS["sm_120f"]
# ".e3m2, .e2m3 and .e2m1 ... requires sm_120a and are supported on sm_120f or higher in the same
# family from PTX ISA version 8.8"; the same note for .kind / .block_scale / .scale_vec_size.
SM120AF = REQUIREMENTS["sm_120f"]
# ".kind::mxf4nvf4 and .kind::mxf4 are supported on sm_120a, sm_121a".
SM120A_121A = REQUIREMENTS["sm_120a"]

# The syntax lines as rows:
#   (shape, dtypes, atypes, btypes, ctypes, spvariants, kind, A regs, B regs, max selector f)
# Register counts are the fragment sizes per thread: a sparse A of 16 x K/2 and a dense B of
# K x 8 elements, spread over 32 threads, in 32-bit registers. The selector range: the text says
# "0..3"; the per-shape limits (which threads of a group hold the metadata) come from the sparse
# storage section 9.7.14.6.1, which shared/spec lacks; they are ptxas 13.0's, measured one by one
# (ptxas itself allows 0..3 for m16n8k32 .f32.f16.f16.f32 but 0..1 for .f16.f16.f16.f16 and
# .f32.bf16.bf16.f32 of the same shape; we take 0..1 for the whole shape).
SP = {".sp", ".sp::ordered_metadata"}
OM = {".sp::ordered_metadata"}
ROWS = [
    # half precision
    (".m16n8k16", {".f16", ".f32"}, {".f16"}, {".f16"}, {".f16", ".f32"}, SP, None, 2, 2, 3),
    (".m16n8k32", {".f16", ".f32"}, {".f16"}, {".f16"}, {".f16", ".f32"}, SP, None, 4, 4, 1),
    # alternate floating point
    (".m16n8k16", {".f32"}, {".bf16"}, {".bf16"}, {".f32"}, SP, None, 2, 2, 3),
    (".m16n8k32", {".f32"}, {".bf16"}, {".bf16"}, {".f32"}, SP, None, 4, 4, 1),
    (".m16n8k8", {".f32"}, {".tf32"}, {".tf32"}, {".f32"}, SP, None, 2, 2, 3),
    (".m16n8k16", {".f32"}, {".tf32"}, {".tf32"}, {".f32"}, SP, None, 4, 4, 1),
    (".m16n8k64", {".f32"}, F8, F8, {".f32"}, SP, None, 4, 4, 0),
    (".m16n8k64", {".f16"}, F8, F8, {".f16"}, OM, None, 4, 4, 0),  # sm_120, PTX 8.7 (see notes)
    (".m16n8k64", {".f16", ".f32"}, F8F6F4, F8F6F4, {".f16", ".f32"}, OM, ".kind::f8f6f4", 4, 4, 0),
    # block scaling
    (".m16n8k128", {".f32"}, {".e2m1"}, {".e2m1"}, {".f32"}, OM, ".kind::mxf4", 4, 4, 0),
    (".m16n8k128", {".f32"}, {".e2m1"}, {".e2m1"}, {".f32"}, OM, ".kind::mxf4nvf4", 4, 4, 0),
    (".m16n8k64", {".f32"}, F8F6F4, F8F6F4, {".f32"}, OM, ".kind::mxf8f6f4", 4, 4, 0),
    # integer
    (".m16n8k32", {".s32"}, {".u8", ".s8"}, {".u8", ".s8"}, {".s32"}, SP, None, 2, 2, 1),
    (".m16n8k64", {".s32"}, {".u8", ".s8"}, {".u8", ".s8"}, {".s32"}, SP, None, 4, 4, 0),
    (".m16n8k64", {".s32"}, {".u4", ".s4"}, {".u4", ".s4"}, {".s32"}, SP, None, 2, 2, 1),
    (".m16n8k128", {".s32"}, {".u4", ".s4"}, {".u4", ".s4"}, {".s32"}, SP, None, 4, 4, 0),
]
# Table 36 (block scaling for mma): kind -> {scale_vec_size: stypes}; None = qualifier omitted.
SCALE = {
    ".kind::mxf4": {None: {".ue8m0"}, ".scale_vec::2X": {".ue8m0"}},
    ".kind::mxf4nvf4": {".scale_vec::2X": {".ue8m0"}, ".scale_vec::4X": {".ue8m0", ".ue4m3"}},
    ".kind::mxf8f6f4": {None: {".ue8m0"}, ".scale_vec::1X": {".ue8m0"}},
}
TYPES = {".f16", ".f32", ".bf16", ".tf32", ".s32", ".u8", ".s8", ".u4", ".s4", ".ue8m0", ".ue4m3"} | F8F6F4


def mma(c: Check) -> None:
    if not (c.i.get(".sp") or c.i.get(".sp::ordered_metadata")):
        return                          # dense mma: generic (outside this project's spec texts)
    c.name = "mma.sp"
    types = [q for q in c.i.qualifiers if q in TYPES]
    rest = [q for q in c.i.qualifiers if q not in TYPES]
    # the non-type qualifiers are order-free; the types are positional (d, a, b, c {, s})
    sub = Check(type(c.i)(c.i.opcode, tuple(rest), c.i.operands, c.i.predicate, c.i.loc), c.ctx, c.out, "mma.sp")
    q = sub.slots([Slot.of(".spvariant", ".sp .sp::ordered_metadata", True), Slot.of(".sync", ".sync", True),
                   Slot.of(".aligned", ".aligned", True),
                   Slot.of(".shape", ".m16n8k8 .m16n8k16 .m16n8k32 .m16n8k64 .m16n8k128", True),
                   Slot.of(".alayout", ".row", True), Slot.of(".blayout", ".col", True),
                   Slot.of(".satfinite", ".satfinite"),
                   Slot.of(".kind", ".kind::f8f6f4 .kind::mxf8f6f4 .kind::mxf4 .kind::mxf4nvf4"),
                   Slot.of(".block_scale", ".block_scale"),
                   Slot.of(".scale_vec_size", ".scale_vec::1X .scale_vec::2X .scale_vec::4X")], S)
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
    row = next((r for r in ROWS if r[0] == shape and d in r[1] and a in r[2] and b in r[3]
                and cc in r[4] and r[6] == kind), None)
    if row is None:
        c.err(f"mma.sp does not support {shape}{kind or ''} with types "
              f"{d}{a}{b}{cc} ({S})")
        return
    if spv not in row[5]:
        c.err(f"{shape}{kind or ''}{d}{a}{b}{cc} requires .sp::ordered_metadata, not {spv} ({S})")
    if d != cc:
        c.err(f"mma.sp with {shape}: .dtype ({d}) must be the same as .ctype ({cc}) ({S})")
    if q[".satfinite"] and d != ".s32":
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
    dregs = 2 if d == ".f16" else 4
    nops = 10 if block else 6
    if c.count(nops):
        for k, (what, n) in enumerate((("d", dregs), ("a", row[7]), ("b", row[8]), ("c", dregs))):
            if c.operand(k, "vec", what):
                c.vector(k, n, what)
        c.operand(4, "r32", "e (sparsity metadata)")
        if c.operand(5, "imm", "f (sparsity selector)"):
            c.imm_range(5, 0, row[9], f"sparsity selector for {shape}{a}", S)
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
    # PTX ISA notes
    c.since((7, 1), "mma.sp", S)
    if spv == ".sp::ordered_metadata":
        c.since((8, 5), "mma.sp::ordered_metadata", S)
    if a in F8 and b in F8 and not kind:
        c.since((8, 4), ".e4m3/.e5m2 mma.sp", S)
    if d == ".f16" and a in F8 and not kind:
        c.since((8, 7), ".f16 dtype/ctype with .e4m3/.e5m2", S)
    if kind:
        c.since((8, 7), kind, S)
    if kind == ".kind::mxf4nvf4" and svs == ".scale_vec::4X" and types[4] == ".ue8m0":
        c.since((9, 1), ".scale_vec::4X with .ue8m0", S)
    # Target ISA notes
    c.target(SM80, "mma.sp", S)
    if a in F8 and b in F8 and not kind:
        c.target(SM89, ".e4m3/.e5m2 mma.sp", S)
    if d == ".f16" and a in F8 and not kind:
        c.target(SM120, ".f16 dtype/ctype with .e4m3/.e5m2", S)
    if kind in (".kind::mxf4", ".kind::mxf4nvf4"):
        c.target(SM120A_121A, kind, S)
    elif kind:
        c.target(SM120AF, kind, S)


RULES = {"mma": mma}
