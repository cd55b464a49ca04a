"""tcgen05.mma, .mma.sp, .mma.ws, .mma.ws.sp: the whole family on one CTA or a CTA pair
(PTX ISA 9.7.16.10; syntax 9.7.16.10.9.1-4, tcgen05-mma-sp.md).

    D = A*B + D            (enable-input-d true)       D = A*B   (false: C = +0)
    D = A*B + D * 2^-s     (scale-input-d s, kinds f16 / tf32)
    D = (A*scale_A)*(B*scale_B) + D                    (.block_scale kinds)

The instruction is data: `Tcgen05Mma` holds its qualifiers and which optional operands it has;
`Tcgen05Mma.issues(target)` checks them against the syntax forms and notes of 9.7.16.10.9.x
(the QUALIFIER_RULES table below). The instruction descriptor is checked by
`descriptors.InstrDescriptor.issues` (Tables 39, 42-44, 49, 50, 54, 55).

`tcgen05_mma(state, mma, ...)` executes one instruction: it gathers A (shared memory through its
descriptor, or Tensor Memory at the data-path layout), B (shared memory of each CTA), the
sparsity metadata and the scale factors (Tensor Memory), decompresses a sparse A
(`sparsity.decompress`), applies negate / .ashift / the zero-column mask, calls the numerics
engine (`ptxsim.numerics.mma`, arch sm_100) and writes D into Tensor Memory at the data-path
layout of its shape (`datapath.datapath_layout`), skipping the lanes of disable-output-lane.

cta_group::2 (CuTe SM100_*_2x1SM traits, ALayout/BLayout): CTA c of the pair holds A rows
[c*M/2, (c+1)*M/2) and B columns [c*N/2, (c+1)*N/2) at the *same* shared-memory descriptor in its
own shared memory, D rows for its half at the same Tensor Memory address; each CTA reads its own
scale factors and metadata.
"""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field

import numpy as np

from ptxsim.errors import (CollectorBufferError, DescriptorError, LayoutAssumptionWarning,
                           LayoutError, OperandError, TmemAccessError, UndefinedBehavior,
                           UnsupportedFeature)
from ptxsim.isa import sparsity
from ptxsim.isa import targets as _targets
from ptxsim.isa.cta import CtaPairState, CtaState, ctas_of
from ptxsim.isa.datapath import DataPathLayout, datapath_layout
from ptxsim.isa.descriptors import InstrDescriptor, SmemDescriptor, ZeroColumnMaskDescriptor
from ptxsim.isa.legality import Slot
from ptxsim.isa.smem_layout import gather_operands, operand_bytes, operand_plan, read_operand
from ptxsim.isa.tmem import N_COLUMNS, N_LANES, split_address
from ptxsim.isa.tmem_cp import E2M1_CONTAINER_SHIFT
from ptxsim.types.formats import get_format

ARCH = "sm_100"                    # the numerics profile of every tcgen05 target
KINDS = ("f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4")
BLOCK_SCALED = ("mxf8f6f4", "mxf4", "mxf4nvf4")
COLLECTOR_OPS = ("fill", "use", "lastuse", "discard")
SCALE_VECS = ("1X", "2X", "4X", "block16", "block32")

# Table 54 / 55: which .scale_vectorsize each block-scaled kind takes
SCALE_VEC_KINDS = {"mxf8f6f4": ("1X", "block32"), "mxf4": ("2X", "block32"),
                   "mxf4nvf4": ("2X", "4X", "block16", "block32")}
# 9.7.16.10.9.1: default .scale_vectorsize ("mxf4: defaults to .block32"; mxf4nvf4: none, must be
# given; mxf8f6f4: ptxas 13.0 treats the omitted size as .block32 too, = .scale_vec::1X)
SCALE_VEC_DEFAULT = {"mxf8f6f4": "block32", "mxf4": "block32", "mxf4nvf4": None}
# Number of scale factors per row of A per MMA (N of .scale_vec::NX; aliases of 9.7.16.10.9.1)
SCALE_VEC_COUNT = {("mxf8f6f4", "1X"): 1, ("mxf8f6f4", "block32"): 1,
                   ("mxf4", "2X"): 2, ("mxf4", "block32"): 2,
                   ("mxf4nvf4", "2X"): 2, ("mxf4nvf4", "block32"): 2,
                   ("mxf4nvf4", "4X"): 4, ("mxf4nvf4", "block16"): 4}
# disable-output-lane vector size per .cta_group (9.7.16.10.9.1 table)
DISABLE_OUTPUT_LANE_WORDS = {1: 4, 2: 8}
SCALE_INPUT_D_RANGE = range(0, 16)              # 9.7.16.10.9.1: [0, 15]

# Target ISA notes of 9.7.16.10.9.1 / .2 beyond the descriptor's, from ptxsim.isa.targets (the one
# table of target rules); checked against ptxas 13.0 in tests/isa/test_tcgen05_mma_ptxas.py.
TARGET_FEATURES = {
    # "Argument scale-input-d requires sm_100a and is supported on sm_100f or higher in the same
    # family" (ptxas 13.0 rejects it on sm_110a/f): sm_100a, sm_100f, sm_103a, sm_103f
    "scale_input_d": _targets.FEATURES["tcgen05.mma.scale_input_d"].targets,
    # ".scale_vec::1X, .scale_vec::2X, .scale_vec::4X requires sm_100a" (arch-specific targets;
    # ptxas 13.0 rejects them on every 'f' target): sm_100a, sm_101a, sm_103a, sm_110a
    "scale_vec::NX": _targets.FEATURES["tcgen05.mma.scale_vec::NX"].targets,
}


def _version(v) -> tuple[int, int]:
    if isinstance(v, tuple):
        return v
    major, minor = str(v).split(".")
    return int(major), int(minor)


@dataclass(frozen=True)
class Tcgen05Mma:
    """One tcgen05.mma{.ws}{.sp} instruction: its qualifiers and which optional operands it has.

    collector: ".collector::<buffer>::<op>" as "<buffer>::<op>" (e.g. "a::fill", "b2::use") or
    None (default: a::discard, b0::discard for .ws). scale_vec: "1X", "2X", "4X", "block16",
    "block32" or None. a_tmem: A is read from Tensor Memory ([a-tmem]) instead of a descriptor.
    has_disable_output_lane / has_zero_column_mask / scale_input_d: the optional operands.
    """
    kind: str
    cta_group: int = 1
    sparse: bool = False
    ws: bool = False
    a_tmem: bool = False
    block_scale: bool = False
    scale_vec: str | None = None
    collector: str | None = None
    ashift: bool = False
    scale_input_d: int | None = None
    has_disable_output_lane: bool = False
    has_zero_column_mask: bool = False

    @classmethod
    def from_opcode(cls, opcode: str, **operands) -> "Tcgen05Mma":
        """Build from the dotted opcode text, e.g. "tcgen05.mma.sp.cta_group::1.kind::f16.
        collector::a::fill" (the parser's and executor's entry); `operands` says which optional
        operands the instruction has (a_tmem=, scale_input_d=, has_disable_output_lane=,
        has_zero_column_mask=). Unknown qualifiers raise OperandError."""
        text = opcode.strip().rstrip(";").split()[0]
        parts = text.split(".")
        if parts[:2] != ["tcgen05", "mma"]:
            raise OperandError(f"'{opcode}' is not a tcgen05.mma instruction")
        kw: dict = {}
        for q in parts[2:]:
            if q == "ws":
                kw["ws"] = True
            elif q == "sp":
                kw["sparse"] = True
            elif q.startswith("cta_group::") and q[11:] in ("1", "2"):
                kw["cta_group"] = int(q[11:])
            elif q.startswith("kind::"):
                kw["kind"] = q[6:]
            elif q == "block_scale":
                kw["block_scale"] = True
            elif q.startswith("scale_vec::"):
                kw["scale_vec"] = q[11:]
            elif q in ("block16", "block32"):
                kw["scale_vec"] = q
            elif q == "ashift":
                kw["ashift"] = True
            elif q.startswith("collector::"):
                kw["collector"] = q[11:]
            else:
                raise OperandError(f"'{opcode}': unknown tcgen05.mma qualifier '.{q}' "
                                   "(9.7.16.10.9.1-4)")
        if "kind" not in kw:
            raise OperandError(f"'{opcode}': .kind is required (9.7.16.10.9.1)")
        return cls(**kw, **operands)

    # ---- derived -------------------------------------------------------------------------
    @property
    def collector_buffer(self) -> str:
        return (self.collector or ("b0::discard" if self.ws else "a::discard")).split("::")[0]

    @property
    def collector_op(self) -> str:
        return (self.collector or "a::discard").split("::")[-1]

    @property
    def effective_scale_vec(self) -> str | None:
        return self.scale_vec if self.scale_vec is not None else SCALE_VEC_DEFAULT.get(self.kind)

    def ptx(self, operands: bool = True) -> str:
        """The instruction as PTX text (register names r*/rd*/p0 for the operands)."""
        q = "tcgen05.mma" + (".ws" if self.ws else "") + (".sp" if self.sparse else "")
        q += f".cta_group::{self.cta_group}.kind::{self.kind}"
        if self.block_scale:
            q += ".block_scale"
            if self.scale_vec:
                q += "." + (self.scale_vec if self.scale_vec.startswith("block")
                            else f"scale_vec::{self.scale_vec}")
        if self.ashift:
            q += ".ashift"
        if self.collector:
            q += f".collector::{self.collector}"
        if not operands:
            return q
        ops = ["[r1]", "[r2]" if self.a_tmem else "rd1", "rd2"]
        if self.sparse:
            ops.append("[r3]")
        ops.append("r4")
        if self.block_scale:
            ops += ["[r5]", "[r6]"]
        if self.has_disable_output_lane:
            ops.append("{" + ", ".join(f"r{8 + i}" for i in
                                       range(DISABLE_OUTPUT_LANE_WORDS.get(self.cta_group, 4)))
                       + "}")
        ops.append("p0")
        if self.scale_input_d is not None:
            ops.append(str(self.scale_input_d))
        if self.has_zero_column_mask:
            ops.append("rd3")
        return q + " " + ", ".join(ops) + ";"

    # ---- legality --------------------------------------------------------------------------
    def issues(self, target: str = "sm_100a", ptx_version=None) -> list[OperandError]:
        """Every reason the qualifier / operand combination is illegal: the cross-field RULES,
        the qualifier-level TARGET_NOTES (.scale_vec::NX, .block16/.block32, scale-input-d);
        with `ptx_version` ("8.7" or (8, 7)) also PTX_VERSION_NOTES and the instruction-level
        TARGET_NOTES (tcgen05, .kind::i8, .sp with mxf4*) with their "from PTX ISA 8.8"
        qualifiers. Without a PTX version those three are judged by target name alone in the
        instruction descriptor's check (descriptors.InstrDescriptor.issues, as DescriptorError)."""
        if self.kind not in KINDS:
            return [OperandError(f"tcgen05.mma: .kind::{self.kind} is not one of "
                                 f"{', '.join(KINDS)} (9.7.16.10.9.1)")]
        if self.cta_group not in (1, 2):
            return [OperandError(f"tcgen05.mma: .cta_group::{self.cta_group} is not ::1 or ::2")]
        me = self.ptx(operands=False)
        out = [OperandError(f"{me}: {r.why}") for r in RULES if r.illegal(self)]
        have = None if ptx_version is None else _version(ptx_version)
        if have is not None:
            for n in PTX_VERSION_NOTES:
                if n.applies(self) and have < n.since:
                    out.append(OperandError(f"{me}: {n.what(self)} needs PTX ISA "
                                            f"{n.since[0]}.{n.since[1]} or later, the module is "
                                            f"{have[0]}.{have[1]} ({n.section} PTX ISA notes)"))
        for n in TARGET_NOTES:
            if (n.why or have is not None) and n.applies(self) and not n.req.ok(target, have):
                out.append(OperandError(f"{me}: " + (n.why or f"{n.what(self)} is not supported "
                                                     f"on {target} (supported: {n.req}) "
                                                     f"({n.section} Target ISA notes)")))
        return out

    def validate(self, target: str = "sm_100a", ptx_version=None) -> "Tcgen05Mma":
        found = self.issues(target, ptx_version)
        if found:
            raise found[0]
        return self


def _coll(i: Tcgen05Mma):
    if i.collector is None:
        return None, None
    parts = i.collector.split("::")
    return (parts[0], parts[1]) if len(parts) == 2 else (i.collector, None)


# ----------------------------------------------------------------------- legality, as data
# The one table of tcgen05.mma{.ws}{.sp} (9.7.16.10.9.1-4): the qualifier slots of each variant,
# the cross-field RULES, the PTX ISA notes and the Target ISA notes. Tcgen05Mma.issues (isa) and
# the front-end validator (ptx/legality/tcgen05.py `mma`) both read these rows; each rule carries
# the isa's wording (`why`) and the validator's (`says`, with the spelling as written).
SECTIONS = {(False, False): "9.7.16.10.9.1", (True, False): "9.7.16.10.9.2",
            (False, True): "9.7.16.10.9.3", (True, True): "9.7.16.10.9.4"}    # (.sp, .ws)
CTA_GROUPS = {False: (1, 2), True: (1,)}      # .ws exists only as .cta_group::1 (9.7.16.10.9.3)
COLLECTOR_BUFFERS = {False: ("a",), True: ("b0", "b1", "b2", "b3")}          # .collector::a / b<n>
WS_KINDS = tuple(k for k in KINDS if k not in BLOCK_SCALED)   # 9.7.16.10.9.3 .kind


def _sv(sv: str | None) -> str | None:
    """A .scale_vectorsize as written: "2X" -> ".scale_vec::2X", "block32" -> ".block32"."""
    if sv is None:
        return None
    return "." + sv if sv.startswith("block") else ".scale_vec::" + sv


def _kq(kind: str | None) -> str | None:
    return None if kind is None else ".kind::" + kind


def mma_name(i) -> str:
    return "tcgen05.mma" + (".ws" if i.ws else "") + (".sp" if i.sparse else "")


def qualifier_slots(ws: bool) -> tuple:
    """The qualifier slots of 9.7.16.10.9.1-4 (the .ws forms have no .block_scale,
    .scale_vectorsize or .ashift, and the b0-b3 collector buffers)."""
    slots = [Slot.of(".sp", ".sp"), Slot.of(".ws", ".ws"),
             Slot.of(".cta_group", tuple(f".cta_group::{g}" for g in CTA_GROUPS[ws]), True),
             Slot.of(".kind", tuple(".kind::" + k for k in KINDS), True),
             Slot.of(".collector_usage", tuple(f".collector::{b}::{op}"
                                               for b in COLLECTOR_BUFFERS[ws]
                                               for op in COLLECTOR_OPS))]
    if not ws:
        slots += [Slot.of(".block_scale", ".block_scale"),
                  Slot.of(".scale_vectorsize", tuple(_sv(v) for v in SCALE_VECS)),
                  Slot.of(".ashift", ".ashift")]
    return tuple(slots)


SLOTS = {ws: qualifier_slots(ws) for ws in (False, True)}


def view_of(q: dict, sp: bool, ws: bool, **operands) -> Tcgen05Mma:
    """The instruction the rules judge, from the qualifiers matched to SLOTS (slot name ->
    qualifier or None, as isa.legality.match_slots returns them; a slot left empty or filled
    wrongly is None, so kind and cta_group may be None here)."""
    kind, cg, coll, svs = (q.get(".kind"), q.get(".cta_group"), q.get(".collector_usage"),
                           q.get(".scale_vectorsize"))
    return Tcgen05Mma(kind=kind and kind[len(".kind::"):], cta_group=cg and int(cg[-1]),
                      sparse=sp, ws=ws, block_scale=bool(q.get(".block_scale")),
                      scale_vec=svs and svs.split("::")[-1].lstrip("."),
                      collector=coll and coll[len(".collector::"):], ashift=bool(q.get(".ashift")),
                      **operands)


@dataclass(frozen=True)
class MmaRule:
    """One cross-field rule: `illegal(i)` over a Tcgen05Mma (or a `view_of` one); `why`: the
    isa's wording; `says(i, name, section)`: the validator's, None where the validator states
    the rule through its slots or operand forms instead. `stage`: where the validator checks
    it ("qualifiers": after the slots; "operands": among the operands)."""
    name: str
    illegal: object
    why: str
    says: object = None
    stage: str = "qualifiers"


# Transcribed from the six syntax forms of 9.7.16.10.9.1 / .2 (non-.ws) and the two of
# 9.7.16.10.9.3 / .4 (.ws), their descriptions and Table 54 / 55. The validator's rules come in
# the order it reports them.
RULES = tuple([
    MmaRule("ws_cta_group", lambda i: i.ws and i.cta_group not in CTA_GROUPS[True],
            ".ws exists only as .cta_group::1 (9.7.16.10.9.3 syntax; Table 39: .ws with cta_group "
            "2 is Invalid)"),
    MmaRule("ws_kind", lambda i: i.ws and i.kind in BLOCK_SCALED,
            ".ws takes .kind::f16, tf32, f8f6f4, i8 only (9.7.16.10.9.3; Table 39: Invalid)",
            lambda i, n, s: f"{_kq(i.kind)} is not valid for {n} (only "
                            f"{', '.join(_kq(k) for k in WS_KINDS)}) ({s})"),
    MmaRule("kind_needs_block_scale",
            lambda i: i.kind in BLOCK_SCALED and not i.block_scale and not i.ws,
            f"kinds {', '.join(BLOCK_SCALED)} need .block_scale with [scale-A-tmem], "
            "[scale-B-tmem] (9.7.16.10.9.1 syntax 2, 4)",
            lambda i, n, s: f"{_kq(i.kind)} requires .block_scale for {n} ({s})"),
    MmaRule("block_scale_kind",
            lambda i: i.block_scale and i.kind is not None and i.kind not in BLOCK_SCALED,
            ".block_scale is only for .kind::mxf8f6f4, mxf4, mxf4nvf4 (9.7.16.10.9.1 syntax 2, 4)",
            lambda i, n, s: f".block_scale is not valid with {_kq(i.kind)} ({s})"),
    MmaRule("scale_vec_needs_block_scale",
            lambda i: i.scale_vec is not None and not i.block_scale and i.kind is not None,
            ".scale_vectorsize needs .block_scale (9.7.16.10.9.1 syntax 2, 4)",
            lambda i, n, s: f"{_sv(i.scale_vec)} requires .block_scale ({s})"),
    MmaRule("scale_vec_known", lambda i: i.scale_vec is not None and i.scale_vec not in SCALE_VECS,
            f".scale_vectorsize is one of {', '.join(SCALE_VECS)} (9.7.16.10.9.1)"),
    MmaRule("table54", lambda i: i.block_scale and i.scale_vec in SCALE_VECS
            and i.kind in SCALE_VEC_KINDS and i.scale_vec not in SCALE_VEC_KINDS[i.kind],
            "this .scale_vectorsize is not valid for the kind (Table 54 / Table 55)",
            lambda i, n, s: f"{_kq(i.kind)} cannot be combined with {_sv(i.scale_vec)} "
                            "(Table 54)"),
    MmaRule("mxf4nvf4_explicit",
            lambda i: i.block_scale and i.kind == "mxf4nvf4" and i.scale_vec is None,
            "for .kind::mxf4nvf4 the .scale_vectorsize must be explicitly specified "
            "(9.7.16.10.9.1)",
            lambda i, n, s: f".kind::mxf4nvf4 requires an explicit .scale_vectorsize ({s})"),
    MmaRule("ashift_block_scale", lambda i: i.ashift and i.block_scale and i.kind is not None,
            "the .block_scale forms have no .ashift (9.7.16.10.9.1 syntax 4)",
            lambda i, n, s: f".ashift is not valid with .block_scale ({s})"),
    MmaRule("ashift_collector",
            lambda i: i.ashift and i.kind is not None and _coll(i)[1] in ("fill", "use"),
            "it is illegal to specify .collector::a::use or ::fill along with .ashift "
            "(9.7.16.10.9.1)",
            lambda i, n, s: f".collector::{i.collector} cannot be combined with .ashift ({s})"),
    MmaRule("scale_input_d_kind",
            lambda i: i.scale_input_d is not None and i.kind not in ("f16", "tf32"),
            "scale-input-d is only valid for .kind::tf32 and .kind::f16 (9.7.16.10.9.1)",
            lambda i, n, s: f"scale-input-d is only valid with .kind::f16 and .kind::tf32, not "
                            f"{_kq(i.kind)} ({s})", "operands"),
    MmaRule("scale_input_d_ws", lambda i: i.scale_input_d is not None and i.ws,
            ".ws has no scale-input-d operand (9.7.16.10.9.3 syntax)"),
    MmaRule("scale_input_d_range", lambda i: isinstance(i.scale_input_d, int)
            and i.scale_input_d not in SCALE_INPUT_D_RANGE,
            f"scale-input-d must be in [{SCALE_INPUT_D_RANGE.start}, "
            f"{SCALE_INPUT_D_RANGE.stop - 1}] (9.7.16.10.9.1)"),
    MmaRule("disable_output_lane_ws", lambda i: i.has_disable_output_lane and i.ws,
            ".ws has no disable-output-lane operand (9.7.16.10.9.3 syntax)"),
    MmaRule("disable_output_lane_block_scale",
            lambda i: i.has_disable_output_lane and i.block_scale,
            "the .block_scale forms have no disable-output-lane operand (9.7.16.10.9.1 syntax 2, "
            "4)"),
    MmaRule("zero_column_mask_ws", lambda i: i.has_zero_column_mask and not i.ws,
            "zero-column-mask-desc is an operand of .ws only (9.7.16.10.9.3)"),
    MmaRule("ashift_ws", lambda i: i.ashift and i.ws, ".ws has no .ashift (9.7.16.10.9.3 syntax)"),
    MmaRule("ashift_a_tmem", lambda i: i.ashift and not i.a_tmem,
            ".ashift needs A in Tensor Memory ([a-tmem]) (9.7.16.10.9.1 syntax 3, 6)",
            lambda i, n, s: f".ashift requires matrix A in Tensor Memory ([a-tmem]) ({s})",
            "operands"),
    MmaRule("collector_op", lambda i: i.collector is not None and _coll(i)[1] not in COLLECTOR_OPS,
            f".collector op must be one of {', '.join(COLLECTOR_OPS)}"),
    MmaRule("collector_a", lambda i: i.collector is not None and not i.ws
            and _coll(i)[0] not in COLLECTOR_BUFFERS[False],
            "without .ws the collector buffer is ::a (9.7.16.10.9.1)"),
    MmaRule("collector_b", lambda i: i.collector is not None and i.ws
            and _coll(i)[0] not in COLLECTOR_BUFFERS[True],
            "with .ws the collector buffer is ::b0, ::b1, ::b2 or ::b3 (9.7.16.10.9.3)"),
])
RULE = {r.name: r for r in RULES}
# the old name: (illegal(instruction, target), why) for the rules of the instruction alone
QUALIFIER_RULES = tuple((lambda i, t, r=r: r.illegal(i), r.why) for r in RULES)


@dataclass(frozen=True)
class Note:
    """One PTX ISA note (`since`) or Target ISA note (`req`) of 9.7.16.10.9.x: it `applies(i)`
    to an instruction; `what(i)` names the feature in diagnostics; `why`: the isa's wording of
    a target note it checks without a PTX version (None: only with one, see issues)."""
    applies: object
    what: object
    section: str = "9.7.16.10.9.1"
    since: tuple = (8, 6)
    req: object = None
    why: str | None = None
    stage: str = "qualifiers"


# PTX ISA notes; ptxas 13.0 agrees, including that an omitted .scale_vectorsize is .block32
# (PTX ISA 8.8): "Feature '.block32' requires PTX ISA .version 8.8 or later".
PTX_VERSION_NOTES = (
    Note(lambda i: True, mma_name, since=(8, 6)),
    Note(lambda i: i.kind == "mxf4nvf4", lambda i: ".kind::mxf4nvf4", since=(8, 7)),
    Note(lambda i: i.scale_vec in ("block16", "block32"), lambda i: _sv(i.scale_vec),
         since=(8, 8)),
    Note(lambda i: i.block_scale and i.scale_vec is None
         and SCALE_VEC_DEFAULT.get(i.kind) == "block32",
         lambda i: ".block32 (the default .scale_vectorsize)", since=(8, 8)),
)

_SP_MXF4 = ("mxf4", "mxf4nvf4")
# Target ISA notes (ptxsim.isa.targets has the Req of each): the instruction's own (exactly one
# applies), then the .scale_vectorsize's, then scale-input-d's (checked among the operands).
TARGET_NOTES = (
    Note(lambda i: i.kind == "i8", lambda i: f"{mma_name(i)} with .kind::i8",
         req=_targets.TCGEN05_I8),
    Note(lambda i: i.kind != "i8" and i.sparse and i.kind in _SP_MXF4,
         lambda i: f"{mma_name(i)} with .kind::{i.kind}", "9.7.16.10.9.2",
         req=_targets.ARCH_SPECIFIC_10X_11X),
    Note(lambda i: i.kind != "i8" and not (i.sparse and i.kind in _SP_MXF4), mma_name,
         req=_targets.TCGEN05),
    # ".scale_vec::1X, .scale_vec::2X, .scale_vec::4X requires sm_100a": ptxas 13.0 accepts them
    # on every architecture-specific tcgen05 target and refuses the family targets.
    Note(lambda i: i.scale_vec in ("1X", "2X", "4X"), lambda i: _sv(i.scale_vec),
         req=_targets.ARCH_SPECIFIC_10X_11X,
         why=f".scale_vec::NX requires an arch-specific target "
             f"({', '.join(sorted(TARGET_FEATURES['scale_vec::NX']))}); use .block16 / .block32 "
             "on family targets (9.7.16.10.9.1 Target ISA notes)"),
    # ".block16/.block32 requires sm_100f or sm_110f"
    Note(lambda i: i.scale_vec is not None and i.scale_vec not in ("1X", "2X", "4X"),
         lambda i: _sv(i.scale_vec), req=_targets.BLOCK_N,
         why=".block16 / .block32 need a target of the sm_100f or sm_110f family (9.7.16.10.9.1 "
             "Target ISA notes)"),
    # "Argument scale-input-d requires sm_100a and is supported on sm_100f or higher in the same
    # family from PTX ISA version 8.8" (ptxas 13.0 rejects it on sm_110a/f)
    Note(lambda i: i.scale_input_d is not None, lambda i: "scale-input-d",
         req=_targets.SCALE_INPUT_D, stage="operands",
         why=f"scale-input-d needs one of {', '.join(sorted(TARGET_FEATURES['scale_input_d']))} "
             "(9.7.16.10.9.1 Target ISA notes)"),
)


# --------------------------------------------------------------------------------------------
# element containers: A in Tensor Memory (9.7.16.10.4.3, 9.7.16.10.4.5)
# --------------------------------------------------------------------------------------------
# E2M1_CONTAINER_SHIFT (tmem_cp): e2m1 in bits [5:2] of its byte (FACTS section 2), the same
# container tcgen05.cp's decompression produces.


def container_bits(fmt: str, kind: str) -> int:
    """Bits one A element takes in a Tensor Memory word: 32 (tf32), 16, 8, or 4 (e2m1 of
    mxf4 / mxf4nvf4, two per byte). 4/6-bit types of f8f6f4 / mxf8f6f4 take an 8-bit container."""
    bits = get_format(fmt).storage_bits
    if bits in (4, 6):
        return 4 if kind in ("mxf4", "mxf4nvf4") else 8
    return bits


def a_tmem_words(matrix: np.ndarray, fmt: str, kind: str) -> np.ndarray:
    """Pack an (M, K) matrix of A element bits into (M, K*bits/32) Tensor Memory words, element
    0 in the low bits (the layout tcgen05.st writes and the MMA reads)."""
    a = np.asarray(matrix).astype(np.uint64)
    cb = container_bits(fmt, kind)
    if cb == 8 and fmt == "e2m1":
        a = a << np.uint64(E2M1_CONTAINER_SHIFT)
    per = 32 // cb
    M, K = a.shape
    if K % per:
        raise LayoutError(f"K = {K} {fmt} elements do not fill whole 32-bit columns")
    a = a.reshape(M, K // per, per) << (np.arange(per, dtype=np.uint64) * np.uint64(cb))
    return np.bitwise_or.reduce(a, axis=-1).astype(np.uint32)


def a_from_tmem_words(words: np.ndarray, fmt: str, kind: str) -> np.ndarray:
    """The inverse of a_tmem_words: (M, C) words -> (M, C*32/bits) element bits. Container bits
    outside the element (padding of 4/6-bit types) are ignored."""
    cb = container_bits(fmt, kind)
    per = 32 // cb
    w = np.asarray(words, np.uint64)[..., None] >> (np.arange(per, dtype=np.uint64) * np.uint64(cb))
    w = w & np.uint64((1 << cb) - 1)
    if cb == 8 and fmt == "e2m1":
        w = w >> np.uint64(E2M1_CONTAINER_SHIFT)
    w = w & np.uint64((1 << get_format(fmt).storage_bits) - 1)
    return w.reshape(w.shape[0], -1).astype(np.uint8 if get_format(fmt).storage_bits <= 8 else
                                          np.uint16 if get_format(fmt).storage_bits <= 16
                                          else np.uint32)


def negate_bits(bits: np.ndarray, fmt: str) -> np.ndarray:
    """Flip the sign bit of every element (Negate A/B Matrix, Table 42 bits 13/14)."""
    f = get_format(fmt)
    return bits ^ np.asarray(1 << (f.storage_bits - 1)).astype(bits.dtype)


# --------------------------------------------------------------------------------------------
# scale factors in Tensor Memory (9.7.16.10.7; CuTe tmem_sf_frg)
# --------------------------------------------------------------------------------------------
def _sf_group_columns(which: str, count: int, N: int | None) -> int:
    """Columns between consecutive groups of 4 scale-factor slots (only K = 96 reaches a second
    group). CuTe tmem_sf_frg tiles the K scale-factor index j as byte j%4 of the columns of group
    j/4; a group spans the MN extent's columns: ceil(rows/32) for SFA, and for SFB the N rounded up
    to 128 (CUTLASS deduce_smem_layoutSFB, MMA_N_SFB) / 32, i.e. 4 columns for N <= 128 and 8 for
    N > 128 -- the split the spec's K=96 SFB figures make (9.7.16.10.7.3.4-5: "N<=128", "N>128")."""
    if which == "B":
        return -(-N // 128) * 4
    return -(-count // 32)


def scale_factor_cells(which: str, layout: DataPathLayout, count: int, nsf: int, sf_id: int,
                       N: int | None = None, k96: bool = False):
    """(lanes (count, nsf, copies), columns (count, nsf), bytes (count, nsf)) of the scale factors
    of `count` rows of A (which="A") or columns of B ("B"), relative to the scale address.

    4x1 data paths (layouts A, D; SFA of B): index i at lanes (i%32)+32r, r=0..3, column i/32
    (CuTe tmem_sf_frg ScaleFactorDuplicated4by1; datapath.scale_factor_position; for SFA of B also
    the CuTe DSL example 2cta_mma_blockscale_m128.py: 64 local rows, 2 columns per K block).
    SFB of layout B (2x2): lanes (i%32) + 64*(i / (N/2)) + 32r, r=0..1, column (i % (N/2))/32
    (CuTe ScaleFactorDuplicated2by2 and the same DSL example, N = 256; CuTe's atom gives the same
    for N = 128; other N: LayoutAssumptionWarning, see docs/layouts.md).
    Scale factor s of the row sits in slot sf_id + s: byte (sf_id + s) % 4 (9.7.16.10.7.2: the ID
    is the byte / half-word offset in the word). Only K = 96 (3 or 6 scale factors) runs past
    byte 3: slot q then lies in group q/4, _sf_group_columns further right (CuTe SM103 collective:
    MMA i starts at K-SF index 3i (block32) / 6i (block16) of a tmem_sf_frg tensor, which gives
    the descriptor ID = that index % 4, as 9.7.16.10.7.2.4-5 allow: IDs 0-3 / 0, 2).
    """
    i = np.arange(count)[:, None, None]
    s = np.arange(nsf)[None, :, None]
    slot = sf_id + s
    if not k96 and sf_id + nsf > 4:
        raise DescriptorError(f"scale_{which.lower()}_id", sf_id, f"{nsf} scale factors from byte "
                              f"{sf_id} do not fit one 32-bit Tensor Memory word (9.7.16.10.7.2)",
                              "instruction descriptor")
    if k96 and layout.id not in ("A", "D"):
        raise LayoutError(f"K = 96 scale factors for data-path layout {layout.id} (M = "
                          f"{layout.M}, .cta_group::{layout.cta_group}): Table 39 has K = 96 only "
                          "for M = 256; CUTLASS's sm_103 collective covers 4x1 data paths only")
    if which == "B" and layout.id == "B":
        half = N // 2
        if N not in (128, 256):
            warnings.warn(LayoutAssumptionWarning(
                f"SFB of layout B (2x2) with N = {N}: placed at lane half n / (N/2), column "
                "(n % (N/2)) / 32, as D is; sources confirm only N = 128 / 256 (CuTe's atom rounds "
                "N up to 128 and would split elsewhere: docs/layouts.md)"), stacklevel=3)
        lanes = (i % 32) + 64 * (i // half) + 32 * np.arange(2)[None, None, :]
        cols = (i % half) // 32 + 0 * s
    elif layout.id in ("A", "B", "D"):
        lanes = (i % 32) + 32 * np.arange(4)[None, None, :]
        cols = i // 32 + _sf_group_columns(which, count, N) * (slot // 4)
    else:
        raise LayoutError(f"scale factors for data-path layout {layout.id} (M = {layout.M}) are "
                          "not defined: block-scaled kinds use M = 128 / 256 (Table 39)")
    lanes = np.broadcast_to(lanes, (count, nsf, lanes.shape[-1]))
    cols = np.broadcast_to(cols[..., 0], (count, nsf))
    byte = np.broadcast_to(slot[..., 0] % 4, (count, nsf))
    return lanes, cols, byte


def write_scale_factors(cells: np.ndarray, address: int, scales: np.ndarray, which: str,
                        layout: DataPathLayout, sf_id: int = 0, N: int | None = None,
                        k96: bool = False) -> None:
    """Store scale factors (count, nsf) of A rows / B columns into every copy the tensor core
    expects (what tcgen05.cp .32x128b.warpx4 does for 4x1). `address` is a Tensor Memory address."""
    lane0, col0 = split_address(address & 0x3FFFFFFF)
    sc = np.asarray(scales, np.uint32)
    lanes, cols, byte = scale_factor_cells(which, layout, sc.shape[0], sc.shape[1], sf_id, N, k96)
    cols = np.broadcast_to((cols + col0)[..., None], lanes.shape)
    byte = np.broadcast_to(byte[..., None], lanes.shape).astype(np.uint32)
    vals = np.broadcast_to(sc[..., None], lanes.shape)
    L, C = (lanes + lane0).ravel(), cols.ravel()
    np.bitwise_and.at(cells, (L, C), ~(np.uint32(0xFF) << (8 * byte.ravel())))
    np.bitwise_or.at(cells, (L, C), (vals.ravel() << (8 * byte.ravel())).astype(np.uint32))


def _read_scale_factors(cta: CtaState, address: int, which: str, layout: DataPathLayout,
                        count: int, nsf: int, sf_id: int, N: int | None, what: str,
                        k96: bool = False) -> np.ndarray:
    # CuTe puts the scale-factor ID into address bits [30, 32) (FACTS section 3); the instruction
    # takes the ID from the instruction descriptor, so those bits are not part of the lane.
    lane0, col0 = split_address(int(address) & 0x3FFFFFFF)
    if lane0 != 0:
        raise TmemAccessError(f"{what}: scale_{which} address lane {lane0}; scale factors span "
                              "all 128 lanes from lane 0 (9.7.16.10.7)", lane=lane0, column=col0)
    lanes, cols, byte = scale_factor_cells(which, layout, count, nsf, sf_id, N, k96)
    cols = np.broadcast_to((cols + col0)[..., None], lanes.shape)
    _check_cells(cta, lanes, cols, f"{what} scale_{which}")
    vals = (cta.tmem.cells[lanes, cols] >> (8 * np.broadcast_to(byte[..., None], lanes.shape))
            .astype(np.uint32)) & 0xFF
    if (vals != vals[..., :1]).any():
        i, s, r = (int(x) for x in np.argwhere(vals != vals[..., :1])[0])
        raise UndefinedBehavior(f"{what}: scale factor {s} of {'row' if which == 'A' else 'column'}"
                                f" {i} of scale_{which} differs between its copies (lanes "
                                f"{int(lanes[i, s, 0])} and {int(lanes[i, s, r])}); scale factors "
                                "must be duplicated to all 32-lane partitions (9.7.16.10.7)")
    return vals[..., 0].astype(np.uint8)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def _check_cells(cta: CtaState, lanes, cols, what: str) -> None:
    lanes, cols = np.broadcast_arrays(np.asarray(lanes), np.asarray(cols))
    if lanes.size == 0:
        return
    if lanes.min() < 0 or lanes.max() >= N_LANES or cols.min() < 0 or cols.max() >= N_COLUMNS:
        bad = np.flatnonzero(((lanes < 0) | (lanes >= N_LANES) | (cols < 0)
                              | (cols >= N_COLUMNS)).ravel())[0]
        raise TmemAccessError(f"{what}: outside Tensor Memory (128 lanes x 512 columns)",
                              lane=int(lanes.ravel()[bad]), column=int(cols.ravel()[bad]))
    cta.tmem.check_allocated(lanes, cols, what)


def _lane_offset(address: int, layout: DataPathLayout, what: str, operand: str) -> tuple[int, int]:
    lane, col = split_address(int(address))
    if lane not in layout.lane_alignments:
        raise TmemAccessError(f"{what}: [{operand}] has lane {lane}; data-path layout {layout.id} "
                              f"(M = {layout.M}) needs Tensor Memory lane alignment "
                              f"{' or '.join(map(str, layout.lane_alignments))} (9.7.16.10.5)",
                              lane=lane, column=col)
    return lane, col


def _disabled_lanes(mask, cta_group: int, what: str) -> np.ndarray:
    """(cta_group, 128) bool: lanes whose D is not updated. Words 0-3 cover lanes 0-127 of the
    even CTA, words 4-7 (cta_group::2) those of the odd CTA (assumption, docs/tcgen05-mma.md)."""
    words = DISABLE_OUTPUT_LANE_WORDS[cta_group]
    if mask is None:
        return np.zeros((cta_group, N_LANES), bool)
    m = np.asarray(mask)
    if m.shape != (words,) or m.dtype.kind not in "ui" or (m < 0).any() or (m >> 32).any():
        raise OperandError(f"{what}: disable-output-lane is a vector of {words} 32-bit values "
                           f"for .cta_group::{cta_group} (9.7.16.10.9.1), got {m.tolist()}")
    bits = (m.astype(np.uint64)[:, None] >> np.arange(32, dtype=np.uint64)) & 1
    return bits.reshape(cta_group, N_LANES).astype(bool)


def _scale_block(K: int, nsf: int, scale_type: str) -> tuple[int, int]:
    """(block size handed to numerics, repeat factor). One scale factor covers K/nsf logical
    elements (a sparse MMA's K is the logical K: 9.7.16.10.7.2 headings "2X with K=64/K=128");
    numerics takes blocks of 32 (16 for ue4m3), so a 64-element block is two repeated scales."""
    logical = K // nsf
    base = 16 if scale_type == "ue4m3" or logical % 32 else 32
    return base, logical // base


def _mma_numerics(a, b, c, *, kind, atype, btype, dtype, scale_a=None, scale_b=None,
                  scale_type=None, block=None, satfinite=False, scale_input_d=0):
    from ptxsim.numerics import mma
    if not scale_input_d:
        return mma(a, b, c, arch=ARCH, kind=kind, atype=atype, btype=btype, ctype=dtype,
                   dtype=dtype, scale_a=scale_a, scale_b=scale_b, scale_type=scale_type,
                   block=block, satfinite=satfinite)
    return _mma_scaled_c(a, b, c, scale_input_d, kind=kind, atype=atype, btype=btype, dtype=dtype)


def stored_columns(nibbles, kind: str, shape: tuple[int, int]) -> np.ndarray:
    """(M, K/2): the logical column of every stored element of a sparse A, read off the
    metadata (sparsity.stored_positions). The metadata's legality is checked by
    sparsity.decompress on the stored values themselves, not here: checking it against
    stand-in values would refuse what decompress excuses (an undefined value over a chunk of
    zeros, CUTLASS's compressor's 0b0000)."""
    cols = sparsity.stored_positions(nibbles, kind)
    if cols.shape != tuple(shape):
        raise OperandError(f"sparse .kind::{kind}: {shape[0]} x {shape[1]} stored A elements, "
                           f"but the metadata names {cols.shape[1]} per row")
    return cols


def _mma_sparse_numerics(a, b_rows, c, *, kind, atype, btype, dtype, scale_a=None,
                         scale_b=None, scale_type=None, block=None, satfinite=False,
                         scale_input_d=0):
    """Sparse D = A*B + C: a (M, K/2) stored elements, b_rows (M, K/2, N) the B rows each
    stored element meets (numerics.mma_sparse); scale-input-d scales C exactly as
    `_mma_scaled_c` does."""
    from ptxsim.numerics import fdpa, mma_sparse
    if not scale_input_d:
        return mma_sparse(a, b_rows, c, arch=ARCH, kind=kind, atype=atype, btype=btype,
                          ctype=dtype, dtype=dtype, scale_a=scale_a, scale_b=scale_b,
                          scale_type=scale_type, block=block, satfinite=satfinite)
    from ptxsim.numerics.params import check_types, params
    from ptxsim.numerics.unpack import raw_bits, unpack
    check_types(ARCH, kind, atype, btype, dtype, dtype)
    p = params(ARCH, kind, atype, btype, dtype)
    ua, ub = unpack(raw_bits(a, atype, "a"), atype), unpack(raw_bits(b_rows, btype, "b"), btype)
    uc = _scaled_c(unpack(raw_bits(c, dtype, "c"), dtype), scale_input_d)
    return fdpa.fused_rows(ua, ub, uc, p, p.rho, dtype)


def _scaled_c(uc, s: int):
    """C's value and alignment exponent scaled exactly by 2^-s (no rounding)."""
    from ptxsim.numerics.unpack import Unpacked
    scaled = ~(uc.zero | uc.special)
    return Unpacked(np.ldexp(uc.value, -s), np.where(scaled, uc.exp - s, uc.exp).astype(np.int32),
                    uc.zero, uc.special)


def _mma_scaled_c(a, b, c, s: int, *, kind, atype, btype, dtype):
    """D = A*B + C*2^-s for kinds f16 / tf32: the fused model with C's value and alignment
    exponent scaled exactly by 2^-s (the spec's formula; no rounding of the scaled C).
    Uses the numerics engine's pieces; see docs/tcgen05-mma.md (integration point)."""
    from ptxsim.numerics import fdpa
    from ptxsim.numerics.params import check_types, params
    from ptxsim.numerics.unpack import Unpacked, raw_bits, unpack
    check_types(ARCH, kind, atype, btype, dtype, dtype)
    p = params(ARCH, kind, atype, btype, dtype)
    ua, ub = unpack(raw_bits(a, atype, "a"), atype), unpack(raw_bits(b, btype, "b"), btype)
    uc = unpack(raw_bits(c, dtype, "c"), dtype)
    scaled = ~(uc.zero | uc.special)
    uc = Unpacked(np.ldexp(uc.value, -s), np.where(scaled, uc.exp - s, uc.exp).astype(np.int32),
                  uc.zero, uc.special)
    fits = getattr(fdpa, "products_fit_f32", None) or getattr(fdpa, "_products_fit_f32")
    cdt = np.float32 if fits(atype, btype) else np.float64
    return fdpa.fused(ua, ub, uc, p, p.rho, dtype, cdt)


def _collector_step(cta: CtaState, mma: Tcgen05Mma, key: tuple, bits: np.ndarray,
                    what: str):
    """Check the collector-buffer rules of 9.7.16.10.9.1 / .3 for the operand the buffer caches;
    return the update (fill / discard / nothing) to apply once the whole MMA has succeeded."""
    name, op = mma.collector_buffer, mma.collector_op
    buf = cta.collector(name)
    if op in ("use", "lastuse"):
        if not buf.valid:
            raise CollectorBufferError(f"{what}: .collector::{name}::{op} without a live "
                                       f"::fill of buffer {name} in CTA {cta.rank}; it requires "
                                       "a previous fill to be still valid (9.7.16.10.9.1)")
        if buf.source != key or buf.bits.shape != bits.shape or (buf.bits != bits).any():
            same_src = buf.source == key
            raise CollectorBufferError(
                f"{what}: .collector::{name}::{op} in CTA {cta.rank} reads "
                + ("an operand whose memory changed since the ::fill" if same_src else
                   f"{key} but buffer {name} was filled from {buf.source}")
                + "; the tensor core may reuse the buffer or reload, so the result would be "
                "undefined (9.7.16.10: the source must not be modified, reuse is opportunistic)")
    if op == "fill":
        return lambda: buf.fill(key, bits)
    if op in ("lastuse", "discard"):
        return buf.discard
    return lambda: None


# --------------------------------------------------------------------------------------------
# the instruction
# --------------------------------------------------------------------------------------------
@dataclass
class MmaResult:
    """What one tcgen05.mma did (for tests, tracing and the CLI): the logical operands it used
    (after decompression / negation / masking) and the D it wrote, per CTA."""
    idesc: object
    layout: DataPathLayout
    a: list = field(default_factory=list)        # per CTA, (M/ctas, K) element bits
    b: np.ndarray | None = None                  # (N, K) element bits (B transposed)
    c: list = field(default_factory=list)        # per CTA, accumulator bits read
    d: list = field(default_factory=list)        # per CTA, D bits computed (M/ctas, N)


_CHECKED: dict = {}          # (mma, idesc, target, ptx_version) -> (InstrDescriptor, layout)


def check_instruction(mma: Tcgen05Mma, idesc: int, target: str = "sm_100a", ptx_version=None):
    """Everything that makes the instruction + instruction descriptor illegal, before any
    operand is read: the qualifier rules, Tables 39, 42-44, 49, 50, 54, 55 (descriptors.py),
    .ashift's M, and the data-path layout of the shape. Returns (InstrDescriptor, layout).

    A pure function of its arguments (both results are frozen): legal combinations are
    memoised; an illegal one raises again on every call."""
    try:
        key = (mma, int(idesc), target, ptx_version)
        hash(key)
    except (TypeError, ValueError, OverflowError):
        return _check_instruction(mma, idesc, target, ptx_version)
    found = _CHECKED.get(key)
    if found is None:
        found = _check_instruction(mma, idesc, target, ptx_version)
        if len(_CHECKED) >= 1024:
            _CHECKED.clear()
        _CHECKED[key] = found
    return found


def _check_instruction(mma: Tcgen05Mma, idesc: int, target: str, ptx_version):
    what = mma.ptx(operands=False)
    mma.validate(target, ptx_version)
    if not 0 <= int(idesc) < 1 << 32:
        raise DescriptorError("idesc", idesc, "the instruction descriptor is a 32-bit register",
                              "instruction descriptor")
    desc = InstrDescriptor.decode(int(idesc), mma.kind)
    desc.validate(sparse=mma.sparse, ws=mma.ws, cta_group=mma.cta_group, target=target,
                  scale_vec=mma.effective_scale_vec if mma.block_scale else None)
    if desc.k96:
        # The K = 96 scale-factor placement is known (scale_factor_cells(k96=True), CuTe SM103);
        # what is missing is the operands: K = 96 block scaling (3X / 6X) in SCALE_VEC_COUNT and
        # numerics, and the shared-memory reading CUTLASS uses for it (LBO mode 1, the descriptor
        # wrapping into the next buffer: SM103 mma_unpack).
        raise LayoutError(f"{what}: K = 96 (sm_103a) execution is not implemented (its operand "
                          "fetch from shared memory, LBO mode 1, is not modelled); the scale-factor "
                          "placement is available as scale_factor_cells(..., k96=True)")
    if mma.ashift and desc.m not in (128, 256):
        raise OperandError(f"{what}: .ashift is only allowed with M = 128 or M = 256, the "
                           f"instruction descriptor says M = {desc.m} (9.7.16.10.9.1)")
    return desc, datapath_layout(desc.m, mma.cta_group, mma.sparse, mma.ws)


def tcgen05_mma(state: CtaState | CtaPairState, mma: Tcgen05Mma | None = None,
                **operands) -> MmaResult:
    """Execute one tcgen05.mma{.ws}{.sp} on `state` (a CtaState for .cta_group::1, a
    CtaPairState for ::2) and update its Tensor Memory and collector buffers.

    mma: the instruction (`Tcgen05Mma`); or give its fields as keywords (kind=..., sparse=...).
    Operands as the PTX names them: d_tmem, a_desc | a_tmem, b_desc, sp_meta_tmem, idesc,
    scale_a_tmem, scale_b_tmem, disable_output_lane (4 / 8 uint32), enable_input_d,
    scale_input_d, zero_column_mask (64-bit descriptor). Descriptors are ints (raw bits).
    target / ptx_version: the module's .target and .version (None: no PTX ISA note check).
    Returns an MmaResult; raises a named ptxsim error for everything illegal or undefined.
    """
    steps = _mma_steps(state, mma, **operands)
    try:
        req = next(steps)
        while True:                  # run each numerics request the steps make, in order
            req = steps.send(None if req is None else req[0](*req[1], **req[2]))
    except StopIteration as done:
        return done.value


def _mma_steps(state: CtaState | CtaPairState, mma: Tcgen05Mma | None = None, *,
               d_tmem: int, b_desc: int, idesc: int, enable_input_d: bool = True,
                a_desc: int | None = None, a_tmem: int | None = None,
                sp_meta_tmem: int | None = None, scale_a_tmem: int | None = None,
                scale_b_tmem: int | None = None, disable_output_lane=None,
                scale_input_d: int | None = None, zero_column_mask: int | None = None,
                target: str = "sm_100a", ptx_version=None, **qualifiers):
    """`tcgen05_mma` as a generator, so that a batch of instructions can share numerics calls
    (`tcgen05_mma_batch`).  It reads every operand and yields each numerics computation as a
    request (function, args, kwargs), receiving D's bits back; then yields None once all reads
    are done, and on resumption writes Tensor Memory and the collector buffers and returns the
    MmaResult.  Nothing is written before that last resumption.
    """

    if mma is None:
        qualifiers.setdefault("a_tmem", a_tmem is not None)
        qualifiers.setdefault("scale_input_d", scale_input_d)
        qualifiers.setdefault("has_disable_output_lane", disable_output_lane is not None)
        qualifiers.setdefault("has_zero_column_mask", zero_column_mask is not None)
        mma = Tcgen05Mma(**qualifiers)
    elif qualifiers:
        raise OperandError(f"give the instruction either as `mma` or as keywords, not both "
                           f"({', '.join(qualifiers)})")
    what = mma.ptx(operands=False)
    # operands present exactly when the syntax has them
    if (a_desc is None) == (a_tmem is None):
        raise OperandError(f"{what}: give exactly one of a_desc (A in shared memory) and a_tmem "
                           "(A in Tensor Memory)")
    if mma.a_tmem != (a_tmem is not None):
        raise OperandError(f"{what}: the instruction reads A from "
                           f"{'Tensor Memory' if mma.a_tmem else 'shared memory'}, but "
                           f"{'a_desc' if a_desc is not None else 'a_tmem'} was given")
    if mma.sparse != (sp_meta_tmem is not None):
        raise OperandError(f"{what}: [sp-meta-tmem] is an operand of the .sp forms only, and "
                           "they require it (9.7.16.10.9.2)")
    if mma.block_scale != (scale_a_tmem is not None and scale_b_tmem is not None) or \
            (not mma.block_scale and (scale_a_tmem is not None or scale_b_tmem is not None)):
        raise OperandError(f"{what}: [scale-A-tmem] and [scale-B-tmem] are operands of the "
                           ".block_scale forms only, and they require both (9.7.16.10.9.1)")
    if mma.scale_input_d != scale_input_d:
        raise OperandError(f"{what}: scale_input_d = {scale_input_d} but the instruction says "
                           f"{mma.scale_input_d}")
    if mma.has_disable_output_lane != (disable_output_lane is not None) or \
            mma.has_zero_column_mask != (zero_column_mask is not None):
        raise OperandError(f"{what}: disable-output-lane / zero-column-mask-desc operands do "
                           "not match the instruction")
    desc, layout = check_instruction(mma, idesc, target, ptx_version)
    ctas = ctas_of(state, mma.cta_group, what)
    for c in ctas:      # one .cta_group per kernel (9.7.16.10.9.1)
        c.tmem._use_cta_group(mma.cta_group, what)
    M, N, K = desc.m, desc.n, desc.k
    atype, btype = desc.atype_name, desc.btype_name
    dtype = desc.dtype_name
    ctas_n = len(ctas)
    Mc, Nc = M // ctas_n, N // ctas_n
    lane_off, d_col = _lane_offset(d_tmem, layout, what, "d-tmem")
    res = MmaResult(desc, layout)

    # ---- B: shared memory of each CTA, columns [c*N/2, (c+1)*N/2) for cta_group::2 ----------
    shift, zmask = 0, None
    if zero_column_mask is not None:
        zc = ZeroColumnMaskDescriptor.decode(int(zero_column_mask))
        zmask = zc.mask(M, N)                       # validates (Table 45)
        shift = zc.column_shift                     # B columns shift .. shift+N-1 are used
    b_parts = [read_operand(c.smem, _smem_descriptor(b_desc), desc, "B",
                            rows=Nc + shift) for c in ctas]
    b = np.concatenate(b_parts, axis=0)[shift:shift + N] if shift else \
        b_parts[0] if len(b_parts) == 1 else np.concatenate(b_parts)   # (a fresh gather)
    updates = []                                 # collector updates, applied after success
    if mma.ws:
        updates.append(_collector_step(ctas[0], mma, ("smem", int(b_desc), shift), b, what))
    if zmask is not None:
        b = np.where(zmask[:, None], np.zeros((), b.dtype), b)
    if desc.negate_b:
        b = negate_bits(b, btype)
    res.b = b

    # ---- block scaling ----------------------------------------------------------------------
    nsf = SCALE_VEC_COUNT[(mma.kind, mma.effective_scale_vec)] if mma.block_scale else 0

    if np.ndim(enable_input_d) or not isinstance(enable_input_d, (bool, int, np.bool_, np.integer)):
        raise OperandError(f"{what}: enable-input-d is one predicate (single-thread semantics, "
                           f"9.7.16.10.9.1), got {enable_input_d!r}")
    enable = bool(enable_input_d)
    disabled = _disabled_lanes(disable_output_lane, mma.cta_group, what)
    out_dtype = np.uint16 if dtype == "f16" else np.uint32
    writes = []
    c_views = []                # CTAs whose res.c is still a view of Tensor Memory
    for ci, cta in enumerate(ctas):
        # ---- A ---------------------------------------------------------------------------
        k_stored = K // 2 if mma.sparse else K
        rows = np.arange(ci * Mc, (ci + 1) * Mc)
        a_hi = None             # layout E: the upper lane half's own A copy, when it differs
        if a_tmem is None:
            a = read_operand(cta.smem, _smem_descriptor(a_desc), desc, "A", rows=Mc)
            key = ("smem", int(a_desc))
        else:
            if desc.transpose_a:
                raise OperandError(f"{what}: A in Tensor Memory cannot be transposed (Transpose A "
                                   "bit set; CuTe SM100_MMA_*_TS: 'A from TMEM can't be "
                                   "transposed')")
            a_lane, a_col = _lane_offset(a_tmem, layout, what, "a-tmem")
            if a_lane != lane_off:
                raise TmemAccessError(f"{what}: A at lane {a_lane} but D at lane {lane_off}; "
                                      f"layout {layout.id} needs the same lane alignment for A, "
                                      "D and the metadata (9.7.16.10.5, 9.7.16.10.8.5)")
            per = 32 // container_bits(atype, mma.kind)
            ncols = -(-k_stored // per)
            _, lanes, kc = layout.a_position(rows[:, None], np.arange(ncols)[None, :], lane_off)
            cols = a_col + np.broadcast_to(kc[..., None], lanes.shape)
            _check_cells(cta, lanes, cols, f"{what} [a-tmem]")
            words = cta.tmem.cells[lanes, cols]
            if layout.id == "E" and (words[..., 1] != words[..., 0]).any():
                # each lane half reads its own copy (datapath.a_position: FlashMLA dual GEMM)
                a_hi = a_from_tmem_words(words[..., 1], atype, mma.kind)[:, :k_stored]
                if mma.sparse:
                    raise UnsupportedFeature(f"{what}: sparse A with different copies in the two "
                                             "lane halves of layout E is not modelled")
                a_hi = negate_bits(a_hi, atype) if desc.negate_a else a_hi
            elif (words != words[..., :1]).any():
                raise UndefinedBehavior(f"{what}: A in Tensor Memory must be duplicated in both "
                                        f"lane halves for layout {layout.id} (CuTe "
                                        "TmemAllocMode::Duplicated); the copies differ")
            a = a_from_tmem_words(words[..., 0], atype, mma.kind)[:, :k_stored]
            key = ("tmem", int(a_tmem))
        if not mma.ws:
            updates.append(_collector_step(cta, mma, key, a, what))
        if desc.negate_a:       # the stored elements; a sparse A's pruned zeros stay +0
            a = negate_bits(a, atype)
        if mma.sparse:
            m_lane, m_col = _lane_offset(sp_meta_tmem, layout, what, "sp-meta-tmem")
            if m_lane != lane_off:
                raise TmemAccessError(f"{what}: metadata at lane {m_lane} but D at lane "
                                      f"{lane_off}: layouts C and F need one lane alignment "
                                      "(9.7.16.10.8.5)")
            lane_m, col_m, _ = sparsity.metadata_cells(mma.kind, K, Mc, mma.ws)
            sel = sparsity.selector_column(mma.kind, desc.selector)
            _check_cells(cta, lane_m + m_lane, col_m + m_col + sel, f"{what} [sp-meta-tmem]")
            nib = sparsity.read_metadata(cta.tmem.cells, m_lane, m_col, mma.kind, K, Mc,
                                         desc.selector, mma.ws)
            a_stored = a
            a = sparsity.decompress(a, nib, mma.kind, row_offset=ci * Mc)    # checks nib
            sel_cols = stored_columns(nib, mma.kind, a_stored.shape)
        if mma.ashift:          # rows move down one; the first keeps its value (as tcgen05.shift)
            a = np.concatenate([a[:1], a[:-1]], axis=0)
            if mma.sparse:
                a_stored = np.concatenate([a_stored[:1], a_stored[:-1]], axis=0)
                sel_cols = np.concatenate([sel_cols[:1], sel_cols[:-1]], axis=0)
        res.a.append(a)

        # ---- C (the accumulator in Tensor Memory) ------------------------------------------
        d_lanes, d_cols, d_block = _d_cells(layout, ci * Mc, Mc, N, lane_off, d_col)
        # a rectangle lies inside Tensor Memory (_d_cells); then only its columns' allocation
        # is checked (every lane of the block has the same columns); else, or when that finds
        # a hole, the cell-by-cell check (which names the first bad cell)
        if d_block is None or not cta.tmem.columns_allocated(d_block[1].start,
                                                             d_block[1].stop):
            _check_cells(cta, d_lanes, d_cols, f"{what} [d-tmem]")
        if enable:
            # a rectangular f32 / s32 C is read as a view of the cells: nothing is written
            # before every read and computation is done (the `yield None` below), and a view
            # left in res.c is copied before the writes (c_views)
            c = cta.tmem.cells[d_block] if d_block else cta.tmem.cells[d_lanes, d_cols]
            if dtype == "f16":
                c = (c & 0xFFFF).astype(np.uint16)
            elif d_block:
                c_views.append(ci)
        else:
            c = np.zeros((Mc, N), out_dtype)
        res.c.append(c)

        # ---- scale factors -------------------------------------------------------------------
        kw = {}
        if mma.block_scale:
            sfa = _read_scale_factors(cta, scale_a_tmem, "A", layout, Mc, nsf, desc.scale_a_id,
                                      N, what, desc.k96)
            sfb = _read_scale_factors(cta, scale_b_tmem, "B", layout, N, nsf, desc.scale_b_id,
                                      N, what, desc.k96)
            block, rep = _scale_block(K, nsf, desc.scale_type_name)
            kw = dict(scale_a=np.repeat(sfa, rep, axis=1), scale_b=np.repeat(sfb, rep, axis=1).T,
                      scale_type=desc.scale_type_name, block=block)
        sid = (mma.scale_input_d or 0) if enable else 0
        if mma.sparse:
            # the arithmetic measured for sparse MMA on sm_90 (numerics.mma_sparse): one fused
            # dot product per output over the stored elements and the B rows they select;
            # for tcgen05 this is inferred, not measured (docs/tcgen05-mma.md)
            if mma.block_scale:
                block, rep = _scale_block(K // 2, nsf, desc.scale_type_name)
                kw = dict(scale_a=np.repeat(sfa, rep, axis=1),
                          scale_b=np.repeat(sfb, rep, axis=1).T,
                          scale_type=desc.scale_type_name, block=block)
            got = yield (_mma_sparse_numerics, (a_stored, b.T[sel_cols], c),
                         dict(kind=mma.kind, atype=atype, btype=btype, dtype=dtype,
                              satfinite=bool(desc.saturate), scale_input_d=sid, **kw))
        else:
            got = yield (_mma_numerics, (a, b.T, c),
                         dict(kind=mma.kind, atype=atype, btype=btype, dtype=dtype,
                              satfinite=bool(desc.saturate), scale_input_d=sid, **kw))
        d, c_read = _sent(got)
        if c_read is not None and ci in c_views:   # the batch's own copy of this C
            res.c[ci] = c_read
            c_views.remove(ci)
        if a_hi is not None:    # D columns [N/2, N) come from lanes 64..127 and their A copy
            h = N // 2          # (dense only: a sparse A with two copies is UnsupportedFeature)
            d = d.copy()
            d[:, h:] = _sent((yield (_mma_numerics, (a_hi, b[h:].T, c[:, h:]),
                                     dict(kind=mma.kind, atype=atype, btype=btype, dtype=dtype,
                                          satfinite=bool(desc.saturate), scale_input_d=sid))))[0]
        res.d.append(d)
        if d_block and not disabled[ci].any():   # D is one rectangle of cells, all written
            writes.append((cta, d_block, None, d.astype(np.uint32, copy=False)))
        else:
            keep = ~disabled[ci][d_lanes]
            writes.append((cta, d_lanes[keep], d_cols[keep], d.astype(np.uint32)[keep]))

    yield None                                   # every read is done; now the writes
    for ci in c_views:                           # res.c keeps the C that was read
        res.c[ci] = res.c[ci].copy()
    for cta, lanes, cols, vals in writes:        # all reads happen before any write
        if cols is None:
            cta.tmem.cells[lanes] = vals
        else:
            cta.tmem.cells[lanes, cols] = vals
    for update in updates:
        update()
    return res


# Pure functions of immutable inputs, returning frozen dataclasses, that every tcgen05.mma of a
# kernel repeats with the same few arguments: memoised (lru_cache keeps successes only, so an
# illegal value raises on every call).
@functools.lru_cache(maxsize=4096)
def _smem_descriptor_of(value: int) -> SmemDescriptor:
    return SmemDescriptor.decode(value)


def _smem_descriptor(value) -> SmemDescriptor:
    """SmemDescriptor.decode(int(value)), memoised."""
    return _smem_descriptor_of(int(value))


@functools.lru_cache(maxsize=1024)
def _from_opcode(mnemonic: str, flags: tuple) -> Tcgen05Mma:
    """Tcgen05Mma.from_opcode(mnemonic, **dict(flags)), memoised."""
    return Tcgen05Mma.from_opcode(mnemonic, **dict(flags))


_D_CELLS: dict = {}


def _d_cells(layout: DataPathLayout, row0: int, Mc: int, N: int, lane_off: int, d_col: int):
    """(lanes, columns, block) of the Tensor Memory cells of D rows row0 .. row0+Mc-1 (all N
    columns) at lane offset `lane_off`, column `d_col` (datapath.d_position). `block` is the
    (lane slice, column slice) when those cells form one rectangle in (m, n) order, else None.
    A pure function of its arguments, memoised; the arrays are read-only."""
    key = (layout, row0, Mc, N, lane_off, d_col)
    found = _D_CELLS.get(key)
    if found is None:
        m_idx, n_idx = np.meshgrid(np.arange(row0, row0 + Mc), np.arange(N), indexing="ij")
        _, lanes, cols = layout.d_position(m_idx, n_idx, N, lane_off)
        lanes = np.ascontiguousarray(lanes)
        cols = np.ascontiguousarray(cols + d_col)
        l0, c0 = int(lanes[0, 0]), int(cols[0, 0])
        block = None
        if (0 <= l0 and l0 + Mc <= N_LANES and 0 <= c0 and c0 + N <= N_COLUMNS
                and (lanes == np.arange(l0, l0 + Mc)[:, None]).all()
                and (cols == np.arange(c0, c0 + N)[None, :]).all()):
            block = (slice(l0, l0 + Mc), slice(c0, c0 + N))
        lanes.setflags(write=False)
        cols.setflags(write=False)
        found = (lanes, cols, block)
        if len(_D_CELLS) >= 1024:
            _D_CELLS.clear()
        _D_CELLS[key] = found
    return found


def _sent(got):
    """(D bits, the requester's C as the batch copied it, or None): what a numerics request
    gets back — D alone (run by itself), or (D, C copy) from a batched call."""
    return got if isinstance(got, tuple) else (got, None)


def _batch_key(req):
    """Requests with equal keys can share one numerics.mma_batch call (None: run alone)."""
    fn, (a, b, c), kw = req
    if fn is not _mma_numerics or kw.get("scale_input_d"):
        return None
    sa, sb = kw.get("scale_a"), kw.get("scale_b")
    return (kw["kind"], kw["atype"], kw["btype"], kw["dtype"], kw.get("satfinite", False),
            kw.get("scale_type"), kw.get("block"), a.shape, b.shape, c.shape,
            a.dtype.str, b.dtype.str, c.dtype.str,
            None if sa is None else (sa.shape, sa.dtype.str),
            None if sb is None else (sb.shape, sb.dtype.str))


def _run_batched(reqs: list) -> list:
    """The D bits of each numerics request; requests of one form in one batched call."""
    from ptxsim.numerics import mma_batch
    groups: dict = {}
    for i, r in enumerate(reqs):
        groups.setdefault(_batch_key(r) or ("alone", i), []).append(i)
    out = [None] * len(reqs)
    for key, members in groups.items():
        if key[0] == "alone" or len(members) == 1:
            for i in members:
                fn, args, kw = reqs[i]
                out[i] = fn(*args, **kw)
            continue
        kw = dict(reqs[members[0]][2])
        kw.pop("scale_input_d", None)
        stack = [np.stack([reqs[i][1][n] for i in members]) for n in range(3)]
        for name in ("scale_a", "scale_b"):
            if kw.get(name) is not None:
                kw[name] = np.stack([reqs[i][2][name] for i in members])
        d = mma_batch(*stack, arch=ARCH, ctype=kw["dtype"], **kw)
        for t, i in enumerate(members):
            out[i] = (d[t], stack[2][t])          # D, and the copy of C the batch made
    return out


def _finisher(steps):
    def finish() -> MmaResult:
        try:
            steps.send(None)
        except StopIteration as done:
            return done.value
        raise RuntimeError("tcgen05_mma steps yielded after their reads were done")
    return finish


def tcgen05_mma_batch(calls) -> list:
    """Several tcgen05.mma at once: read every instruction's operands, run the numerics of
    those of one form (kind, types, shapes) as one `numerics.mma_batch` call, and hand back,
    per instruction, a `finish()` that writes its D and collector buffers and returns its
    MmaResult.  Bits are those of `tcgen05_mma` run alone (mma_batch is bit-identical per
    entry).

    calls: [(state, mma, operands dict)] as `tcgen05_mma` takes them.  The caller guarantees
    the instructions are independent: pairwise disjoint CTAs, so none reads what another
    writes.  Call each finish() once, in any order.  If reading or computing raises, nothing
    has been written and every finish() runs its instruction alone, so the error comes from
    the same instruction at the same point as without batching.
    """
    gens = [_mma_steps(st, m, **ops) for st, m, ops in calls]
    try:
        reqs = [next(g) for g in gens]
        while any(r is not None for r in reqs):
            live = [i for i, r in enumerate(reqs) if r is not None]
            results = _run_batched([reqs[i] for i in live])
            for i, d in zip(live, results):
                reqs[i] = gens[i].send(d)
    except Exception:          # noqa: BLE001 -- replayed one by one, where it raises again
        for g in gens:
            g.close()
        return [lambda st=st, m=m, ops=ops: tcgen05_mma(st, m, **ops) for st, m, ops in calls]
    return [_finisher(g) for g in gens]


def _fast_form(mma: Tcgen05Mma) -> bool:
    """The instruction forms `tcgen05_mma_ctas` computes: .cta_group::1, dense, A from shared or
    Tensor Memory, with or without disable-output-lane; no block scaling, .ws, .ashift,
    scale-input-d or zero-column mask; the default collector (a::discard)."""
    return (mma.cta_group == 1 and not mma.sparse and not mma.ws and not mma.block_scale
            and not mma.ashift and mma.scale_input_d is None
            and not mma.has_zero_column_mask and mma.collector_buffer == "a"
            and mma.collector_op == "discard")


def tcgen05_mma_ctas(states, mma: Tcgen05Mma, operands: dict, *, smem: np.ndarray,
                     which: np.ndarray, cells: np.ndarray, target: str = "sm_100a",
                     ptx_version=None):
    """One tcgen05.mma instruction issued in B different CTAs at once (the CTAs of a wave run in
    step): the same bits as `tcgen05_mma` on each, as whole-batch array operations -- one
    instruction-descriptor check per distinct idesc, one gather plan per distinct descriptor,
    one gather of every CTA's A and B tiles, one numerics call, one Tensor Memory scatter.

    states: the B CtaStates (pairwise distinct); operands: d_tmem, a_desc or a_tmem, b_desc,
    idesc, enable_input_d as arrays of B values; smem (n, size) uint8 and cells (n, 128, 512)
    uint32: the shared and Tensor Memory of n CTAs, member b's at row which[b] (its state's
    smem / tmem.cells are those rows).

    Returns finish(), which writes every D (and the collector and .cta_group state) once all
    were read and computed; or None when the form (`_fast_form`) or anything about a member
    (a check that would fail, an exited CTA, columns not allocated, A copies that differ) needs
    the general path: then nothing was changed and `tcgen05_mma` per member gives the result,
    or the error, at the same point."""
    if not _fast_form(mma):
        return None
    try:
        return _mma_ctas(states, mma, operands, smem, np.asarray(which, np.int64), cells,
                         target, ptx_version)
    except Exception:          # noqa: BLE001 -- the general path raises it, named and placed
        return None


def _mma_ctas(states, mma, operands, smem, which, cells, target, ptx_version):
    what = mma.ptx(operands=False)
    for st in states:
        if type(st) is not CtaState or st.exited or st.tmem.cta_group not in (None, 1):
            return None
    a_key = "a_tmem" if mma.a_tmem else "a_desc"
    cols_ = [np.asarray(operands[k]).astype(np.uint64) for k in ("idesc", a_key, "b_desc",
                                                                  "d_tmem")]
    enable = np.asarray(operands["enable_input_d"]).astype(bool).reshape(-1)
    off_lanes = None                    # (B, 128) lanes disable-output-lane leaves unwritten
    if mma.has_disable_output_lane:
        dis = np.asarray(operands["disable_output_lane"]).astype(np.uint64)
        if dis.shape != (DISABLE_OUTPUT_LANE_WORDS[1], enable.size) or (dis >> 32).any():
            return None
        off_lanes = ((dis.T[:, :, None] >> np.arange(32, dtype=np.uint64)) & 1).reshape(
            enable.size, N_LANES).astype(bool)
        if not off_lanes.any():
            off_lanes = None
    keys = np.stack(cols_)
    if (keys == keys[:, :1]).all():
        uniq, inv = keys[:, :1], np.zeros(keys.shape[1], np.int64)
    else:
        uniq, inv = np.unique(keys, axis=1, return_inverse=True)
        inv = inv.reshape(-1)
    writes, used = [], []
    for u in range(uniq.shape[1]):
        sel = np.flatnonzero(inv == u)
        w = which[sel]
        idesc, a_val, b_val, d_tmem = (int(x) for x in uniq[:, u])
        desc, layout = check_instruction(mma, idesc, target, ptx_version)
        M, N, K = desc.m, desc.n, desc.k
        atype, btype, dtype = desc.atype_name, desc.btype_name, desc.dtype_name
        lane_off, d_col = _lane_offset(d_tmem, layout, what, "d-tmem")
        b = gather_operands(smem, w, operand_plan(_smem_descriptor(b_val), desc, "B", N,
                                                  smem.shape[1]))
        if mma.a_tmem:
            if desc.transpose_a:
                return None
            a_lane, a_col = _lane_offset(a_val, layout, what, "a-tmem")
            if a_lane != lane_off:
                return None
            per = 32 // container_bits(atype, mma.kind)
            ncols = -(-K // per)
            _, lanes, kc = layout.a_position(np.arange(M)[:, None], np.arange(ncols)[None, :],
                                             lane_off)
            acols = a_col + np.broadcast_to(kc[..., None], lanes.shape)
            if lanes.min() < 0 or lanes.max() >= N_LANES or acols.min() < 0 or \
                    acols.max() >= N_COLUMNS:
                return None
            lo, hi = int(acols.min()), int(acols.max()) + 1
            if not all(states[i].tmem.columns_allocated(lo, hi) for i in sel.tolist()):
                return None
            words = cells[w[:, None, None, None], lanes[None], acols[None]]
            if (words != words[..., :1]).any():
                return None
            a = a_from_tmem_words(words[..., 0].reshape(-1, ncols), atype, mma.kind)
            a = a.reshape(sel.size, M, -1)[:, :, :K]
        else:
            a = gather_operands(smem, w, operand_plan(_smem_descriptor(a_val), desc, "A", M,
                                                      smem.shape[1]))
        if desc.negate_a:
            a = negate_bits(a, atype)
        if desc.negate_b:
            b = negate_bits(b, btype)
        d_lanes, d_cols, d_block = _d_cells(layout, 0, M, N, lane_off, d_col)
        if d_block is None:
            if d_lanes.min() < 0 or d_lanes.max() >= N_LANES or d_cols.min() < 0 or \
                    d_cols.max() >= N_COLUMNS:
                return None
            lo, hi = int(d_cols.min()), int(d_cols.max()) + 1
        else:
            lo, hi = d_block[1].start, d_block[1].stop
        if not all(states[i].tmem.columns_allocated(lo, hi) for i in sel.tolist()):
            return None
        at = _cells_at(cells, w, d_block, d_lanes, d_cols)
        en = enable[sel]
        # C as a view of the cells when nothing below writes into it (mma_batch only reads
        # its operands; D is written by finish(), after the arithmetic)
        c = _cells_read(cells, at, copy=not en.all() and dtype != "f16")
        if dtype == "f16":
            c = (c & 0xFFFF).astype(np.uint16)
        if not en.all():
            c[~en] = 0
        from ptxsim.numerics import mma_batch
        d = mma_batch(a, b.transpose(0, 2, 1), c, arch=ARCH, kind=mma.kind, atype=atype,
                      btype=btype, ctype=dtype, dtype=dtype, satfinite=bool(desc.saturate))
        keep = None if off_lanes is None else ~off_lanes[sel][:, d_lanes]
        writes.append((at, d.astype(np.uint32, copy=False),
                       None if keep is None or keep.all() else keep))
        used.extend(sel.tolist())

    def finish():
        for i in used:
            st = states[i]
            if st.tmem.cta_group is None:
                st.tmem.cta_group = 1
            if st.collector_a.valid:
                st.collector_a.discard()
        for at, d, keep in writes:
            if keep is not None:            # disabled lanes keep what they hold
                d = np.where(keep, d, _cells_read(cells, at))
            _cells_write(cells, at, d)
    return finish


def _cells_at(cells, w, block, lanes, cols):
    """Where D of each member lies in `cells` (n, 128, 512): a slice triple when the members
    are consecutive rows and D is a rectangle (a view: no gather), else flat indices."""
    if block is not None and w.size and w[-1] - w[0] + 1 == w.size and (np.diff(w) == 1).all():
        return (slice(int(w[0]), int(w[-1]) + 1),) + tuple(block)
    pat = (np.asarray(lanes) * N_COLUMNS + np.asarray(cols)).reshape(-1)
    return (w[:, None] * (N_LANES * N_COLUMNS) + pat[None, :]).reshape((w.size,)
                                                                       + np.shape(lanes))


def _cells_read(cells, at, copy: bool = True):
    if isinstance(at, tuple):
        return cells[at].copy() if copy else cells[at]
    return np.take(cells.reshape(-1), at)


def _cells_write(cells, at, d):
    if isinstance(at, tuple):
        cells[at] = d
    else:
        cells.reshape(-1)[at] = d


def parse_operands(inst, read, vector: bool = False) -> tuple:
    """(Tcgen05Mma, operands dict) of a parsed tcgen05.mma issued by one thread; see
    `execute_parsed`. vector: `read` returns an array (one value per issuing thread) and so do
    the operand values (the flags, which name the instruction form, must not vary)."""
    mnemonic = getattr(inst, "mnemonic", None) or str(inst)
    ops = list(getattr(inst, "operands", ()))
    where = getattr(inst, "text", "") or mnemonic

    def addr(op, name):
        if not hasattr(op, "base"):
            raise OperandError(f"'{where}': {name} must be a [Tensor Memory address]")
        base = op.base
        return (read(base) if base else 0) + int(getattr(op, "offset", 0) or 0)

    def reg(op, name):
        if hasattr(op, "value") and not hasattr(op, "name"):
            return int(op.value)                       # an immediate
        if not hasattr(op, "name"):
            raise OperandError(f"'{where}': {name} must be a register")
        v = np.asarray(read(op.name)).astype(np.uint64) if vector else int(read(op.name))
        return (1 - v) if getattr(op, "negated", False) else v

    probe = _from_opcode(mnemonic, ())
    need = 4 + probe.sparse + (3 if probe.block_scale else 1)
    if len(ops) < need:
        raise OperandError(f"'{where}': expected at least {need} operands, got {len(ops)}")
    kw: dict = {"d_tmem": addr(ops[0], "d-tmem")}
    a_in_tmem = hasattr(ops[1], "base")
    kw["a_tmem" if a_in_tmem else "a_desc"] = addr(ops[1], "a-tmem") if a_in_tmem else \
        reg(ops[1], "a-desc")
    kw["b_desc"] = reg(ops[2], "b-desc")
    i = 3
    if probe.sparse:
        kw["sp_meta_tmem"] = addr(ops[i], "sp-meta-tmem")
        i += 1
    kw["idesc"] = reg(ops[i], "idesc")
    i += 1
    flags = dict(a_tmem=a_in_tmem)
    if probe.block_scale:
        kw["scale_a_tmem"] = addr(ops[i], "scale-A-tmem")
        kw["scale_b_tmem"] = addr(ops[i + 1], "scale-B-tmem")
        i += 2
    elif hasattr(ops[i], "elements"):
        kw["disable_output_lane"] = np.array([reg(e, "disable-output-lane")
                                              for e in ops[i].elements], np.uint32)
        flags["has_disable_output_lane"] = True
        i += 1
    e = reg(ops[i], "enable-input-d")
    kw["enable_input_d"] = np.asarray(e) != 0 if vector else bool(e)
    i += 1
    if i < len(ops):
        if probe.ws:
            kw["zero_column_mask"] = reg(ops[i], "zero-column-mask-desc")
            flags["has_zero_column_mask"] = True
        else:
            kw["scale_input_d"] = reg(ops[i], "scale-input-d")
            if isinstance(kw["scale_input_d"], np.ndarray):      # vector: one form needed
                sv = np.unique(kw["scale_input_d"])
                if sv.size != 1:
                    raise OperandError(f"'{where}': scale-input-d differs between threads")
                kw["scale_input_d"] = int(sv[0])
            flags["scale_input_d"] = kw["scale_input_d"]
        i += 1
    if i != len(ops):
        raise OperandError(f"'{where}': {len(ops) - i} operand(s) too many for {mnemonic}")
    return _from_opcode(mnemonic, tuple(sorted(flags.items()))), kw


def execute_parsed(state, inst, read, target: str = "sm_100a", ptx_version=None) -> MmaResult:
    """Run a parsed tcgen05.mma instruction (a `ptxsim.ptx.Instruction`, or anything with
    `.mnemonic` and `.operands` of the front end's operand classes) issued by one thread.

    read(name) -> int: the issuing thread's register value (64-bit descriptors as ints,
    predicates as 0/1). Operands follow the syntax forms of 9.7.16.10.9.1-4:
    [d-tmem], a-desc | [a-tmem], b-desc, {[sp-meta-tmem]}, idesc, then either
    [scale-A-tmem], [scale-B-tmem], enable-input-d (.block_scale) or
    {disable-output-lane}, enable-input-d, {scale-input-d | zero-column-mask-desc}.
    ptx_version: the module's .version (None: the PTX ISA notes are not checked).
    """
    mma, kw = parse_operands(inst, read)
    return tcgen05_mma(state, mma, target=target, ptx_version=ptx_version, **kw)


def execute_parsed_batch(items, target: str = "sm_100a", ptx_version=None) -> list:
    """`execute_parsed` for several instructions of independent CTAs (`tcgen05_mma_batch`):
    items [(state, inst, read)] -> one finish() per item, each returning its MmaResult."""
    calls = []
    for state, inst, read in items:
        try:
            mma, kw = parse_operands(inst, read)
        except Exception:      # noqa: BLE001 -- replayed one by one, where it raises again
            return [lambda st=st, i=i, r=r: execute_parsed(st, i, r, target, ptx_version)
                    for st, i, r in items]
        calls.append((state, mma, dict(kw, target=target, ptx_version=ptx_version)))
    return tcgen05_mma_batch(calls)



@dataclass
class MmaFootprint:
    """What one tcgen05.mma touches, per CTA of its group (index 0: the issuing CTA, or the even
    CTA of a pair): Tensor Memory cells as (lanes, columns) index arrays, shared-memory bytes
    as sorted address arrays. `d_read`: the MMA reads D (enable-input-d)."""
    cta_group: int
    d: list                      # [(lanes, cols)] written (and read when d_read)
    d_read: bool
    tmem_reads: list             # [[(lanes, cols), ...]] A in TMEM, scale factors, metadata
    smem_reads: list             # [np.ndarray of byte addresses] A (in smem) and B
    kind: str = ""
    d_blocks: list = field(default_factory=list)   # D as (lane slice, column slice), or None


def mma_footprint(inst, read, target: str = "sm_100a", ptx_version=None,
                  smem_size: int | None = None) -> MmaFootprint:
    """The cells and bytes the tcgen05.mma `inst` issued by one thread (`read` as in
    `execute_parsed`) reads and writes, computed from its operands without running it (the
    sanitizer's view of an MMA in flight). Raises what the execution would raise for a bad
    operand (the caller lets the execution report it)."""
    mma, kw = parse_operands(inst, read)
    what = mma.ptx(operands=False)
    desc, layout = check_instruction(mma, kw["idesc"], target, ptx_version)
    n = mma.cta_group
    M, N, K = desc.m, desc.n, desc.k
    Mc, Nc = M // n, N // n
    lane_off, d_col = _lane_offset(kw["d_tmem"], layout, what, "d-tmem")
    shift = 0
    if kw.get("zero_column_mask") is not None:
        shift = ZeroColumnMaskDescriptor.decode(int(kw["zero_column_mask"])).column_shift
    b = operand_bytes(_smem_descriptor(kw["b_desc"]), desc, "B", rows=Nc + shift,
                      smem_size=smem_size)
    d, tmem_reads, smem_reads, blocks = [], [], [], []
    nsf = SCALE_VEC_COUNT[(mma.kind, mma.effective_scale_vec)] if mma.block_scale else 0
    for ci in range(n):
        lanes, cols, block = _d_cells(layout, ci * Mc, Mc, N, lane_off, d_col)
        d.append((lanes, cols))
        blocks.append(block)
        reads, smem = [], [b]
        if kw.get("a_desc") is not None:
            smem.append(operand_bytes(_smem_descriptor(kw["a_desc"]), desc, "A", rows=Mc,
                                      smem_size=smem_size))
        else:
            a_lane, a_col = _lane_offset(kw["a_tmem"], layout, what, "a-tmem")
            per = 32 // container_bits(desc.atype_name, mma.kind)
            k_stored = K // 2 if mma.sparse else K
            rows = np.arange(ci * Mc, (ci + 1) * Mc)
            _, al, kc = layout.a_position(rows[:, None], np.arange(-(-k_stored // per))[None, :],
                                          lane_off)
            reads.append((al, a_col + np.broadcast_to(kc[..., None], al.shape)))
        if mma.sparse:
            m_lane, m_col = _lane_offset(kw["sp_meta_tmem"], layout, what, "sp-meta-tmem")
            ml, mc, _ = sparsity.metadata_cells(mma.kind, K, Mc, mma.ws)
            reads.append((ml + m_lane, mc + m_col + sparsity.selector_column(mma.kind,
                                                                            desc.selector)))
        if mma.block_scale:
            for which, addr, count, sf_id in (("A", kw["scale_a_tmem"], Mc, desc.scale_a_id),
                                              ("B", kw["scale_b_tmem"], N, desc.scale_b_id)):
                l0, c0 = split_address(int(addr) & 0x3FFFFFFF)
                sl, sc, _ = scale_factor_cells(which, layout, count, nsf, sf_id, N, desc.k96)
                reads.append((sl + l0, np.broadcast_to((sc + c0)[..., None], sl.shape)))
        tmem_reads.append(reads)
        smem_reads.append(smem)
    return MmaFootprint(n, d, bool(kw["enable_input_d"]), tmem_reads, smem_reads, mma.kind,
                        blocks)


def handle_instruction(inst, regs, target, state=None, ptx_version=None) -> dict:
    """`ptxsim.execute` / executor handler (registry, guard="handler", state=True): every thread
    whose guard is true issues one MMA (single-thread semantics, 9.7.16.5 Table 46), in thread
    order, reading its own registers. `state` is the CtaState (or CtaPairState for
    .cta_group::2). tcgen05.mma writes no registers."""
    if not isinstance(state, (CtaState, CtaPairState)):
        raise OperandError(f"'{getattr(inst, 'text', '') or inst}': tcgen05.mma needs the CTA "
                           "state (state=ptxsim.isa.cta.CtaState, or CtaPairState for "
                           ".cta_group::2): it reads shared memory and Tensor Memory")
    threads = None
    pred = getattr(inst, "predicate", None)
    if pred is not None:
        p = (np.asarray(regs.read(pred.name)) != 0) ^ bool(pred.negated)
        threads = np.flatnonzero(p)
    else:
        threads = np.arange(32 * int(regs.warps))
    for t in threads:          # one whole MMA per issuing thread (usually exactly one)
        execute_parsed(state, inst, lambda name, t=t: int(np.asarray(regs.read(name))[t]), target,
                       ptx_version)
    return {}


def _register() -> None:
    from ptxsim.isa import registry
    if "tcgen05.mma" not in registry.HANDLERS:
        registry.register("tcgen05.mma", handle_instruction, guard="handler", state=True)


_register()

__all__ = ["Tcgen05Mma", "tcgen05_mma", "check_instruction", "execute_parsed",
           "handle_instruction", "MmaResult", "QUALIFIER_RULES", "a_tmem_words",
           "a_from_tmem_words", "container_bits", "negate_bits", "scale_factor_cells",
           "write_scale_factors", "SCALE_VEC_COUNT", "TARGET_FEATURES", "PTX_VERSION_NOTES",
           "RULES", "TARGET_NOTES", "SLOTS", "view_of"]
