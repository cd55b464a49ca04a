"""Legality of the tcgen05.* instructions, transcribed from PTX ISA 9.7.16 (shared/spec/
tcgen05-chapter-stack-video-misc.txt, tcgen05-mma-sp.md, tcgen05-cp-shift.md)."""
from __future__ import annotations

from ptxsim.ptx.legality.common import Check, Slot
from ptxsim.isa.targets import ARCH_SPECIFIC_10X_11X, BLOCK_N, SCALE_INPUT_D  # noqa: F401
from ptxsim.ptx.targets import TCGEN05, TCGEN05_I8, Arch, Family, Req

CTA_GROUP = Slot.of(".cta_group", ".cta_group::1 .cta_group::2", True)
SYNC = Slot.of(".sync", ".sync", True)
ALIGNED = Slot.of(".aligned", ".aligned", True)
B32 = Slot.of("type", ".b32", True)
V86 = (8, 6)


def _common(c: Check, section: str, req: Req = TCGEN05) -> None:
    c.since(V86, c.name, section)
    c.target(req, c.name, section)


# ------------------------------------------------------------- 9.7.16.7.1 alloc / dealloc / relinquish
def alloc(c: Check) -> None:
    s = "9.7.16.7.1"
    c.slots([CTA_GROUP, SYNC, ALIGNED, Slot.of(".shared::cta", ".shared::cta"), B32], s)
    if c.count(2):
        c.operand(0, "addr", "dst")
        c.operand(1, "r32|imm", "nCols")
        _ncols(c, 1, s, power_of_two=True)
    _common(c, s)


def dealloc(c: Check) -> None:
    s = "9.7.16.7.1"
    c.slots([CTA_GROUP, SYNC, ALIGNED, B32], s)
    if c.count(2):
        c.operand(0, "r32", "taddr")
        c.operand(1, "r32|imm", "nCols")
        _ncols(c, 1, s, power_of_two=True)
    _common(c, s)


def _ncols(c: Check, idx: int, s: str, power_of_two: bool) -> None:
    # "The operand nCols must be within the range [32, 512] ... must be power of 2."
    v = c.imm(idx)
    if v is None:
        return
    if not 32 <= v <= 512:
        c.err(f"nCols = {v} of {c.name} must be in the range [32, 512] ({s})")
    elif power_of_two and v & (v - 1):
        c.err(f"nCols = {v} of {c.name} must be a power of 2 ({s})")


def relinquish_alloc_permit(c: Check) -> None:
    s = "9.7.16.7.1"
    c.slots([CTA_GROUP, SYNC, ALIGNED], s)
    c.count(0)
    _common(c, s)


# ---------------------------------------------------------------------- 9.7.16.8.3-4 ld / st
SHAPES_LDST = {".16x64b": 1, ".16x128b": 2, ".16x256b": 4, ".32x32b": 1, ".16x32bx2": 1}
NUMS = {".x1": 1, ".x2": 2, ".x4": 4, ".x8": 8, ".x16": 16, ".x32": 32, ".x64": 64, ".x128": 128}
LD_RED_TARGETS = Req(Arch("sm_101a"), Family("sm_101f"), Family("sm_103f"), Family("sm_110f", (9, 0)))


def _regs(shape: str, num: str) -> int | None:
    # Tables 47 / 48: registers = .num x (1 | 2 | 4) by shape; more than 128 is "NA".
    n = NUMS[num] * SHAPES_LDST[shape]
    return n if n <= 128 else None


def ld(c: Check) -> None:
    s = "9.7.16.8.3"
    if c.i.has(".red"):
        return _ld_red(c)
    q = c.slots([SYNC, ALIGNED, Slot.of(".shape", SHAPES_LDST, True), Slot.of(".num", NUMS, True),
                 Slot.of(".pack", ".pack::16b"), B32], s)
    _ldst_shape(c, q, s)
    split = q[".shape"] == ".16x32bx2"
    if c.count(3 if split else 2, form="shape .16x32bx2 takes immHalfSplitoff" if split else ""):
        c.operand(0, "vec", "r")
        c.operand(1, "addr", "taddr")
        if split:
            c.operand(2, "imm", "immHalfSplitoff")
        _ldst_vec(c, q, 0)
    _common(c, s)


def _ld_red(c: Check) -> None:
    s = "9.7.16.8.3"
    q = c.slots([Slot.of(".red", ".red", True), SYNC, ALIGNED,
                 Slot.of(".shape", ".32x32b .16x32bx2", True), Slot.of(".num", NUMS, True),
                 Slot.of(".redOp", ".min .max", True), Slot.of(".abs", ".abs"), Slot.of(".NaN", ".NaN"),
                 Slot.of(".type", ".f32 .u32 .s32", True)], s)
    if q[".type"] in (".u32", ".s32") and (q[".abs"] or q[".NaN"]):
        c.err(f"{q['.abs'] or q['.NaN']} is only allowed with .f32 for tcgen05.ld.red ({s})")
    if q[".num"] == ".x1":
        c.err(f"tcgen05.ld.red requires .num of at least .x2 ({s})")
    _ldst_shape(c, q, s)
    split = q[".shape"] == ".16x32bx2"
    if c.count(4 if split else 3):
        c.operand(0, "vec", "r")
        c.operand(1, "r32", "redval")
        c.operand(2, "addr", "taddr")
        if split:
            c.operand(3, "imm", "immHalfSplitoff")
        _ldst_vec(c, q, 0)
    c.since((8, 8), "tcgen05.ld.red", s)
    c.target(LD_RED_TARGETS, "tcgen05.ld.red", s)


def st(c: Check) -> None:
    s = "9.7.16.8.4"
    q = c.slots([SYNC, ALIGNED, Slot.of(".shape", SHAPES_LDST, True), Slot.of(".num", NUMS, True),
                 Slot.of(".unpack", ".unpack::16b"), B32], s)
    _ldst_shape(c, q, s)
    split = q[".shape"] == ".16x32bx2"
    if c.count(3 if split else 2):
        c.operand(0, "addr", "taddr")
        if split:
            c.operand(1, "imm", "immHalfSplitoff")
        c.operand(len(c.i.operands) - 1, "vec", "r")
        _ldst_vec(c, q, len(c.i.operands) - 1)
    _common(c, s)


def _ldst_shape(c: Check, q: dict, s: str) -> None:
    if q.get(".shape") and q.get(".num") and _regs(q[".shape"], q[".num"]) is None:
        c.err(f"{q['.shape']} with {q['.num']} is not a valid combination for {c.name} "
              f"(Table 47/48: more than 128 registers)")


def _ldst_vec(c: Check, q: dict, idx: int) -> None:
    if q.get(".shape") and q.get(".num"):
        n = _regs(q[".shape"], q[".num"])
        if n is not None:
            c.vector(idx, n, "r")


# ------------------------------------------------------------------------ 9.7.16.8.5 wait
def wait(c: Check) -> None:
    s = "9.7.16.8.5"
    c.slots([Slot.of(".wait_operation", "::ld ::st", True), SYNC, ALIGNED], s)
    c.count(0)
    _common(c, s)


# -------------------------------------------------------------------------- 9.7.16.9.2 cp
CP_SHAPES = ".128x256b .4x256b .128x128b .64x128b .32x128b"
# "Some of the .shape qualifiers require certain .multicast qualifiers" (the ** / *** marks).
CP_MULTICAST = {".64x128b": {".warpx2::02_13", ".warpx2::01_23"}, ".32x128b": {".warpx4"}}


def cp(c: Check) -> None:
    s = "9.7.16.9.2"
    q = c.slots([CTA_GROUP, Slot.of(".shape", CP_SHAPES, True),
                 Slot.of(".multicast", ".warpx2::02_13 .warpx2::01_23 .warpx4"),
                 Slot.of(".dst_fmt", ".b8x16"), Slot.of(".src_fmt", ".b6x16_p32 .b4x16_p64")], s)
    shape, mc = q[".shape"], q[".multicast"]
    if shape:
        need = CP_MULTICAST.get(shape, set())
        if need and mc not in need:
            c.err(f"tcgen05.cp shape {shape} requires multicast {' or '.join(sorted(need))} ({s})")
        elif mc and mc not in need:
            c.err(f"tcgen05.cp multicast {mc} is not allowed with shape {shape} ({s})")
    if bool(q[".dst_fmt"]) != bool(q[".src_fmt"]):
        c.err(f"tcgen05.cp decompression needs both .dst_fmt and .src_fmt ({s})")
    elif q[".dst_fmt"]:
        k = c.i.qualifiers.index(q[".dst_fmt"])
        # `.dst_fmt.src_fmt` is one unit (ptxas: "Illegal modifier '.b6x16_p32.b8x16'").
        if k + 1 >= len(c.i.qualifiers) or c.i.qualifiers[k + 1] != q[".src_fmt"]:
            c.err(f"tcgen05.cp decompression is written .dst_fmt.src_fmt "
                  f"({q['.dst_fmt']}{q['.src_fmt']}) ({s})")
    if c.count(2):
        c.operand(0, "addr", "taddr")
        c.operand(1, "r64", "s-desc")
    _common(c, s)


# ------------------------------------------------------------------------ 9.7.16.9.3 shift
SHIFT_TARGETS = ARCH_SPECIFIC_10X_11X        # sm_100a, sm_101a (= sm_110a), sm_103a


def shift(c: Check) -> None:
    s = "9.7.16.9.3"
    c.slots([CTA_GROUP, Slot.of(".down", ".down", True)], s)
    if c.count(1):
        c.operand(0, "addr", "taddr")
    _common(c, s, SHIFT_TARGETS)


# ------------------------------------------------------------------- 9.7.16.11.1 fence
def fence(c: Check) -> None:
    s = "9.7.16.11.1"
    c.slots([Slot.of("::kind", "::before_thread_sync ::after_thread_sync", True)], s)
    c.count(0)
    _common(c, s)


# ------------------------------------------------------------------- 9.7.16.12.1 commit
def commit(c: Check) -> None:
    s = "9.7.16.12.1"
    q = c.slots([CTA_GROUP, Slot.of(".completion_mechanism", ".mbarrier::arrive::one", True),
                 Slot.of(".shared::cluster", ".shared::cluster"),
                 Slot.of(".multicast", ".multicast::cluster"), Slot.of("type", ".b64", True)], s)
    mc = q[".multicast"] is not None
    if c.count(2 if mc else 1, form="ctaMask is given exactly with .multicast::cluster"):
        c.operand(0, "addr", "mbar")
        if mc:
            c.operand(1, "r16", "ctaMask")
    _common(c, s)


# ------------------------------------------------------------ 9.7.16.10.9 mma / .sp / .ws / .ws.sp
KINDS = ".kind::f16 .kind::tf32 .kind::f8f6f4 .kind::i8 .kind::mxf8f6f4 .kind::mxf4 .kind::mxf4nvf4"
BLOCK_SCALED = {".kind::mxf8f6f4", ".kind::mxf4", ".kind::mxf4nvf4"}
# Table 54 / 55: valid .scale_vectorsize per kind.
SCALE_VECTORSIZE = {
    ".kind::mxf8f6f4": {".scale_vec::1X", ".block32"},
    ".kind::mxf4": {".scale_vec::2X", ".block32"},
    ".kind::mxf4nvf4": {".scale_vec::2X", ".scale_vec::4X", ".block16", ".block32"},
}
COLLECTOR_A = {f".collector::a::{op}" for op in ("fill", "use", "lastuse", "discard")}
COLLECTOR_B = {f".collector::b{n}::{op}" for n in range(4) for op in ("fill", "use", "lastuse", "discard")}
# "Argument scale-input-d requires sm_100a and is supported on sm_100f or higher in the same
# family from PTX ISA version 8.8.": SCALE_INPUT_D, from ptxsim.isa.targets.
# ".scale_vec::1X, .scale_vec::2X, .scale_vec::4X requires sm_100a": ptxas 13.0 accepts them on
# every architecture-specific tcgen05 target (sm_100a, sm_103a, sm_110a) and refuses the family
# targets; we follow ptxas (corpus cases 'Table 54' / target).
SCALE_VEC_NX = ARCH_SPECIFIC_10X_11X
# ".block16/.block32 requires sm_100f or sm_110f": BLOCK_N, from ptxsim.isa.targets.
# tcgen05.mma.sp with .kind::mxf4nvf4 / .kind::mxf4: sm_100a, sm_101a, sm_103a, sm_110a.
SP_MXF4 = ARCH_SPECIFIC_10X_11X


def mma(c: Check) -> None:
    sp, ws = c.i.has(".sp"), c.i.has(".ws")
    s = {(0, 0): "9.7.16.10.9.1", (1, 0): "9.7.16.10.9.2", (0, 1): "9.7.16.10.9.3",
         (1, 1): "9.7.16.10.9.4"}[(sp, ws)]
    c.name = "tcgen05.mma" + (".ws" if ws else "") + (".sp" if sp else "")
    slots = [Slot.of(".sp", ".sp"), Slot.of(".ws", ".ws"),
             Slot.of(".cta_group", ".cta_group::1" if ws else ".cta_group::1 .cta_group::2", True),
             Slot.of(".kind", KINDS, True),
             Slot.of(".collector_usage", COLLECTOR_B if ws else COLLECTOR_A)]
    if not ws:
        slots += [Slot.of(".block_scale", ".block_scale"),
                  Slot.of(".scale_vectorsize", ".scale_vec::1X .scale_vec::2X .scale_vec::4X .block16 .block32"),
                  Slot.of(".ashift", ".ashift")]
    q = c.slots(slots, s)
    kind, bs, svs = q[".kind"], q.get(".block_scale"), q.get(".scale_vectorsize")
    if ws and kind in BLOCK_SCALED:
        c.err(f"{kind} is not valid for {c.name} (only .kind::f16, .kind::tf32, .kind::f8f6f4, "
              f".kind::i8) ({s})")
    if not ws and kind:
        if kind in BLOCK_SCALED and not bs:
            c.err(f"{kind} requires .block_scale for {c.name} ({s})")
        if kind not in BLOCK_SCALED and bs:
            c.err(f".block_scale is not valid with {kind} ({s})")
        if svs and not bs:
            c.err(f"{svs} requires .block_scale ({s})")
        if bs and kind in SCALE_VECTORSIZE:
            if svs and svs not in SCALE_VECTORSIZE[kind]:
                c.err(f"{kind} cannot be combined with {svs} (Table 54)")
            if kind == ".kind::mxf4nvf4" and not svs:
                c.err(f".kind::mxf4nvf4 requires an explicit .scale_vectorsize ({s})")
        if q[".ashift"] and bs:
            c.err(f".ashift is not valid with .block_scale ({s})")
        if q[".ashift"] and q[".collector_usage"] in (".collector::a::fill", ".collector::a::use"):
            c.err(f"{q['.collector_usage']} cannot be combined with .ashift ({s})")
    _mma_operands(c, q, sp, ws, s)
    # PTX ISA notes
    c.since(V86, c.name, s)
    if kind == ".kind::mxf4nvf4":
        c.since((8, 7), ".kind::mxf4nvf4", s)
    if svs in (".block16", ".block32"):
        c.since((8, 8), svs, s)
    elif bs and not svs and kind in (".kind::mxf8f6f4", ".kind::mxf4"):
        # an omitted .scale_vectorsize is .block32, and ptxas 13.0 says so: "Feature '.block32'
        # requires PTX ISA .version 8.8 or later" (tests/test_legality_consistency.py)
        c.since((8, 8), ".block32 (the default .scale_vectorsize)", s)
    # Target ISA notes
    if kind == ".kind::i8":
        c.target(TCGEN05_I8, f"{c.name} with .kind::i8", s)
    elif sp and kind in (".kind::mxf4", ".kind::mxf4nvf4"):
        c.target(SP_MXF4, f"{c.name} with {kind}", s)
    else:
        c.target(TCGEN05, c.name, s)
    if svs and svs.startswith(".scale_vec"):
        c.target(SCALE_VEC_NX, svs, s)
    elif svs:
        c.target(BLOCK_N, svs, s)


def _mma_operands(c: Check, q: dict, sp: bool, ws: bool, s: str) -> None:
    ops = c.i.operands
    kind = q[".kind"]
    bs = q.get(".block_scale") or kind in BLOCK_SCALED      # operand form follows the kind
    # fixed head: [d-tmem], a (a-desc | [a-tmem]), b-desc, {[sp-meta-tmem]}, idesc
    head = 5 if sp else 4
    if len(ops) < head + 1:
        c.count(head + 1, head + 4)
        return
    c.operand(0, "addr", "d-tmem")
    c.operand(1, "r64|imm|addr", "a-desc / a-tmem")
    c.operand(2, "r64|imm", "b-desc")
    if sp:
        c.operand(3, "addr", "sp-meta-tmem")
    c.operand(head - 1, "r32|imm", "idesc")
    if q.get(".ashift") and ops[1].kind != "addr":
        c.err(f".ashift requires matrix A in Tensor Memory ([a-tmem]) ({s})")
    rest = list(range(head, len(ops)))
    if ws:
        # enable-input-d {, zero-column-mask-desc}
        if c.count(head + 1, head + 2, form="enable-input-d {, zero-column-mask-desc}"):
            c.operand(head, "pred|imm", "enable-input-d")
            if len(ops) == head + 2:
                c.operand(head + 1, "r64|imm", "zero-column-mask-desc")
        return
    if bs:
        if c.count(head + 3, form="[scale-A-tmem], [scale-B-tmem], enable-input-d"):
            c.operand(head, "addr", "scale-A-tmem")
            c.operand(head + 1, "addr", "scale-B-tmem")
            c.operand(head + 2, "pred|imm", "enable-input-d")
        return
    # { disable-output-lane }, enable-input-d {, scale-input-d}
    k = head
    if k < len(ops) and ops[k].kind == "vec":
        size = 8 if q[".cta_group"] == ".cta_group::2" else 4
        c.vector(k, size, "disable-output-lane")
        k += 1
    if k >= len(ops):
        c.err(f"{c.name} is missing enable-input-d ({s})")
        return
    c.operand(k, "pred|imm", "enable-input-d")
    k += 1
    if k < len(ops):
        if kind not in (".kind::f16", ".kind::tf32"):
            c.err(f"scale-input-d is only valid with .kind::f16 and .kind::tf32, not {kind} ({s})")
        if c.operand(k, "imm", "scale-input-d"):
            c.imm_range(k, 0, 15, "scale-input-d", s)
        c.target(SCALE_INPUT_D, "scale-input-d", s)
        k += 1
    if k < len(ops):
        c.err(f"{c.name} takes at most {k} operands here, got {len(ops)} ({s})")


RULES = {
    "tcgen05.alloc": alloc, "tcgen05.dealloc": dealloc,
    "tcgen05.relinquish_alloc_permit": relinquish_alloc_permit, "tcgen05.ld": ld, "tcgen05.st": st,
    "tcgen05.wait": wait, "tcgen05.cp": cp, "tcgen05.shift": shift, "tcgen05.mma": mma,
    "tcgen05.fence": fence, "tcgen05.commit": commit,
}
