"""Guard against the two legality judgements of one instruction drifting apart.

Each instruction family is judged twice: by the front-end validator (`ptxsim.ptx.validate`, the
rules in ptx/legality/*.py, used by `ptxsim check`) and by the isa module that executes it.
For misc, stack, video, mma.sp and the Tensor Memory instructions both now read ONE table in
the isa module (isa/misc.py FORMS, isa/stack.py FORMS, isa/video.py SYNTAX + problems,
isa/mma_sp.py LEGAL + notes_of + shape_facts, isa/tmem.py / tmem_ldst.py / tmem_cp.py FORMS +
their cross-field rules; vocabulary in isa/legality.py), so their agreement is true by
construction for the table's content; what remains compared is the two matchers (ptx Check.form
vs isa.legality.check_form, the validator's flows vs the isa checks) and, against ptxas, the
corpus. tcgen05.mma reads isa/tcgen05_mma.py SLOTS, RULES, PTX_VERSION_NOTES and TARGET_NOTES in
both layers. This file feeds both layers the same instructions and asserts the same verdict:

  * every case of the recorded ptxas 13.0 corpus (tests/data/ptx/ptxas_corpus.json), and
  * each isa table's own enumeration (every row it declares legal must pass the validator, and
    the near misses it declares illegal must fail it).

An isa-level check only covers what its table covers (qualifiers, shapes, immediates, target);
operand kinds, register widths and module rules are the validator's alone. So a case counts as a
disagreement when the isa check rejects what the validator accepts, or when the validator rejects,
the isa check accepts, and the validator's reason is one the isa table has a column for
(IN_ISA_SCOPE). The few remaining differences are in KNOWN, each with its reason; a KNOWN entry
that no longer matches anything fails the test too (the list cannot go stale).
ptxas 13.0 is the judge where the two differ (docs/legality.md).
"""
from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from ptxsim.errors import PtxsimError
from ptxsim.isa import misc, mma_sp, stack, tmem, tmem_cp, tmem_ldst, video
from ptxsim.isa.targets import TARGET_MIN_PTX, parse_target, parse_version
from ptxsim.isa.tcgen05_mma import Tcgen05Mma
from ptxsim.ptx import errors_of, parse_instruction, parse_module, validate

CORPUS = json.loads((Path(__file__).parent / "data/ptx/ptxas_corpus.json").read_text())["cases"]


# ------------------------------------------------------------------- isa-level verdicts
class NotJudged(Exception):
    """The isa layer has no table for this instruction (the validator's alone)."""


def _imm_or_name(op):
    if hasattr(op, "value") and not hasattr(op, "name"):
        return int(op.value)
    return getattr(op, "name", str(op))


def isa_misc(inst, target, ptx):
    misc.check(inst.opcode, inst.qualifiers, tuple(_imm_or_name(o) for o in inst.operands),
               target, ptx)


def isa_stack(inst, target, ptx):
    stack.check(inst.opcode, inst.qualifiers, tuple(_imm_or_name(o) for o in inst.operands),
                target, ptx)


def isa_video(inst, target, ptx):
    ins = video.parse(inst.text or str(inst))      # module-parsed instructions have no .text
    video.check_target(ins, target, parse_version(ptx) if ptx else None)


def isa_mma_sp(inst, target, ptx):
    form = mma_sp.form_of(inst)
    form.check_version(ptx)
    form.check_target(target)
    sel = inst.operands[5] if len(inst.operands) > 5 else None
    if sel is not None and hasattr(sel, "value"):
        try:
            form.check_selector(int(sel.value))
        except PtxsimError as e:             # ptxas-legal but faulting: a run-time error only
            if type(e).__name__ != "IllegalInstructionError":
                raise


def isa_tcgen05_mma(inst, target, ptx):
    ops = inst.operands
    probe = Tcgen05Mma.from_opcode(inst.mnemonic)
    flags = {"a_tmem": len(ops) > 1 and hasattr(ops[1], "base")}
    i = 4 + probe.sparse + (2 if probe.block_scale else 0)
    if not probe.block_scale and len(ops) > i and hasattr(ops[i], "elements"):
        flags["has_disable_output_lane"] = True
        i += 1
    i += 1                                            # enable-input-d
    if len(ops) > i:
        if probe.ws:
            flags["has_zero_column_mask"] = True
        else:
            flags["scale_input_d"] = _imm_or_name(ops[i]) if hasattr(ops[i], "value") else 0
    # the rules, PTX ISA notes and Target ISA notes of isa/tcgen05_mma.py (RULES,
    # PTX_VERSION_NOTES, TARGET_NOTES: with a PTX version every note, as the validator)
    Tcgen05Mma.from_opcode(inst.mnemonic, **flags).validate(target, ptx)


def isa_tmem(inst, target, ptx):
    """The Tensor Memory rows (isa/tmem.py, tmem_ldst.py, tmem_cp.py FORMS) with their notes."""
    module = {"tcgen05.ld": tmem_ldst, "tcgen05.st": tmem_ldst, "tcgen05.wait": tmem_ldst,
              "tcgen05.cp": tmem_cp, "tcgen05.shift": tmem_cp}.get(inst.opcode, tmem)
    module.check(inst.opcode, inst.qualifiers, tuple(_imm_or_name(o) for o in inst.operands),
                 target, ptx)


ISA = {"brkpt": isa_misc, "nanosleep": isa_misc, "pmevent": isa_misc, "trap": isa_misc,
       "setmaxnreg": isa_misc, "stacksave": isa_stack, "stackrestore": isa_stack,
       "alloca": isa_stack, "mma": isa_mma_sp, "tcgen05.mma": isa_tcgen05_mma,
       **{op: isa_tmem for op in ("tcgen05.alloc", "tcgen05.dealloc",
                                  "tcgen05.relinquish_alloc_permit", "tcgen05.ld", "tcgen05.st",
                                  "tcgen05.wait", "tcgen05.cp", "tcgen05.shift", "tcgen05.fence",
                                  "tcgen05.commit")},
       **{op: isa_video for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr",
                                   "vmad", "vset", "vadd2", "vsub2", "vavrg2", "vabsdiff2",
                                   "vmin2", "vmax2", "vset2", "vadd4", "vsub4", "vavrg4",
                                   "vabsdiff4", "vmin4", "vmax4", "vset4")}}


def isa_verdict(inst, target, ptx) -> tuple[bool, str]:
    try:
        ISA[inst.opcode](inst, target, ptx)
    except NotJudged:
        raise
    except PtxsimError as e:
        return False, str(e)
    return True, ""


# Validator messages about things an isa table has no column for: operand kinds and widths,
# operand counts, register declarations, module-level rules, and (for the families whose isa
# table has no PTX ISA notes) the PTX version.
OUT_OF_ISA_SCOPE = re.compile(
    r"operand \d+ \(|takes \d+( to \d+)? operands|must be a vector|element '.*' of operand|"
    r"is not declared|^\.target |cannot be compiled for|same \.cta_group|must have 2 elements|"
    r"operand \d+ .* must be|requires PTX ISA version")
TMEM_OPS = {"tcgen05.alloc", "tcgen05.dealloc", "tcgen05.relinquish_alloc_permit", "tcgen05.ld",
            "tcgen05.st", "tcgen05.wait", "tcgen05.cp", "tcgen05.shift", "tcgen05.fence",
            "tcgen05.commit"}
ISA_HAS_PTX_NOTES = {"brkpt", "nanosleep", "pmevent", "trap", "setmaxnreg", "stacksave",
                     "stackrestore", "alloca", "tcgen05.mma", "mma"} | TMEM_OPS


def _in_isa_scope(inst, msg: str) -> bool:
    if "requires PTX ISA version" in msg:
        return inst.opcode in ISA_HAS_PTX_NOTES or inst.opcode.startswith("v")
    return not OUT_OF_ISA_SCOPE.search(msg)


def compare(inst, validator_errors, target, ptx):
    """None when the two agree (or the isa layer does not judge it), else a description."""
    if inst.opcode not in ISA:
        return None
    try:
        isa_ok, isa_msg = isa_verdict(inst, target, ptx)
    except NotJudged:
        return None
    if not isa_ok and not validator_errors:
        return f"isa rejects, validator accepts: {isa_msg}"
    in_scope = [e for e in validator_errors if _in_isa_scope(inst, e)]
    if isa_ok and in_scope:
        return f"validator rejects, isa accepts: {in_scope[0]}"
    return None


# --------------------------------------------------------------------- known differences
# (regex on the instruction text, regex on the disagreement) -> why. Each must still match a
# corpus case.
KNOWN: dict = {}


def _known(text: str, what: str):
    for (pat, why_pat), why in KNOWN.items():
        if re.search(pat, text) and re.search(why_pat, what):
            return (pat, why_pat)
    return None


# ----------------------------------------------------------------------------- the corpus
def corpus_disagreements():
    out = []
    for c in CORPUS:
        try:
            m = parse_module(c["ptx"])
        except PtxsimError:
            continue                              # unparsable: neither table sees it
        errs = [d.message for d in errors_of(validate(m))]
        insts = [i for f in m.functions for i in f.instructions]
        if len(insts) != 2:                        # the instruction and ret
            continue
        d = compare(insts[0], errs, c["target"], c["version"])
        if d:
            out.append((c, d))
    return out


def test_corpus_validator_and_isa_agree():
    found = corpus_disagreements()
    used = set()
    unexplained = []
    for c, d in found:
        k = _known(c["instruction"], d)
        if k is None:
            unexplained.append(f"{c['target']} {c['version']} ptxas_ok={c['ptxas_ok']}: "
                               f"{c['instruction']}\n      {d}")
        else:
            used.add(k)
    assert unexplained == [], "\n".join(unexplained)
    stale = set(KNOWN) - used
    assert not stale, f"KNOWN entries that match nothing any more: {stale}"


def test_corpus_reaches_every_isa_table():
    judged = set()
    for c in CORPUS:
        try:
            m = parse_module(c["ptx"])
        except PtxsimError:
            continue
        op = [i for f in m.functions for i in f.instructions][0].opcode
        if op in ISA:
            judged.add(ISA[op].__name__)
    assert judged == {f.__name__ for f in ISA.values()}


# ------------------------------------------------------------- each isa table's enumeration
REGS = {**{f"%r{i}": ".b32" for i in range(64)}, **{f"%rd{i}": ".b64" for i in range(8)},
        **{f"r{i}": ".b32" for i in range(16)}, **{f"rd{i}": ".b64" for i in range(4)},
        "p0": ".pred", "%p0": ".pred", "%rs1": ".b16", "%a": ".b32", "%b": ".b32", "%c": ".b32", "%d": ".b32"}


def enumeration_disagreements(texts, contexts):
    """Parse each text once; compare the two verdicts in every (target, version) context.
    Returns the unexplained disagreements and how often each (validator, isa) verdict pair
    occurred."""
    out, seen = [], {}
    # a .target older than its own PTX ISA version is a module error before any instruction
    contexts = [(t, v) for t, v in contexts
                if parse_version(v) >= TARGET_MIN_PTX.get(parse_target(t).canonical.name, (0, 0))]
    for text in texts:
        inst = parse_instruction(text)
        for target, ptx in contexts:
            errs = [d.message for d in errors_of(validate(inst, target, ptx, registers=REGS))]
            key = (not errs, isa_verdict(inst, target, ptx)[0])
            seen[key] = seen.get(key, 0) + 1
            d = compare(inst, errs, target, ptx)
            if d and not _known(text, d):
                out.append(f"{target} {ptx}: {text}\n      {d}")
    return out, seen


def assert_agree(texts, contexts):
    bad, seen = enumeration_disagreements(texts, contexts)
    assert bad == [], "\n".join(bad[:40])
    # the enumeration reaches both verdicts, so this guard can fail
    assert seen.get((True, True), 0) > 0 and seen.get((False, False), 0) > 0, seen


MISC_TARGETS = ("sm_11", "sm_20", "sm_52", "sm_70", "sm_90", "sm_90a", "sm_100", "sm_100a",
                "sm_100f", "sm_101a", "sm_103f", "sm_110a", "sm_110f", "sm_120", "sm_120a",
                "sm_121f")
MISC_VERSIONS = ("1.0", "1.4", "3.0", "6.3", "7.3", "8.0", "8.6", "8.8", "9.0")


def misc_texts():
    """Every form of isa/misc.py FORMS with each slot filled every way, plus near misses: a slot
    left out, a foreign qualifier, immediates at and beyond the range, a register operand."""
    out = []
    for f in misc.FORMS.values():
        slots = [sorted(s.values) for s in f.slots]
        quals = list(itertools.product(*slots)) if slots else [()]
        if slots:                                         # near misses
            quals = quals + [q[:-1] for q in quals[:1]] + [q[:-1] + (".b32",) for q in quals[:1]]
        else:
            quals = quals + [(".uni",)]
        if not f.operands:
            ops = [""]
        else:
            rule = f.operands[0].imm
            lo, hi, step = rule.lo, rule.hi, rule.step
            imms = {lo, hi, lo - step, hi + step, lo + step // 2 if step > 1 else lo}
            imms = {v for v in imms if -(1 << 63) <= v < (1 << 64)} | {0, 64, 1000}
            ops = [f" {v}" for v in sorted(imms)] + [" %r1"]
        for q in quals:
            for o in ops:
                out.append(f"{f.opcode}{''.join(q)}{o};")
    return sorted(set(out))


def test_misc_table_and_validator_agree():
    contexts = [(t, v) for t in MISC_TARGETS for v in MISC_VERSIONS]
    assert_agree(misc_texts(), contexts)


def stack_texts():
    out = []
    for t, r in ((".u32", "%r1"), (".u64", "%rd1"), (".b32", "%r1"), ("", "%r1")):
        out += [f"stacksave{t} {r};", f"stackrestore{t} {r};", f"alloca{t} {r}, 16;"]
        out += [f"alloca{t} {r}, {r}, {a};" for a in (1, 3, 8, 0, 1 << 23, 1 << 24)]
    return out


def test_stack_table_and_validator_agree():
    contexts = [(t, v) for t in ("sm_50", "sm_52", "sm_90a", "sm_100a") for v in ("7.2", "7.3", "9.0")]
    assert_agree(stack_texts(), contexts)


def video_texts():
    """The 2000+ video instructions that ran on an H200 (tests/data/hardware/video/video_sm90.npz), plus
    near misses of each op: a bad selector, .sat on a SIMD min, a merge with a secondary op."""
    import numpy as np
    z = np.load(Path(__file__).parent / "data/hardware/video/video_sm90.npz")
    out = sorted(str(t) for t in z["instructions"])
    out += ["vadd.u32.u32.u32 %d.b4, %a, %b, %c;", "vadd.u32.u32.u32.sat.add %d.b0, %a, %b, %c;",
            "vadd2.u32.u32.u32 %d.h0, %a.h44, %b, %c;", "vmax4.u32.u32.u32 %d.b8, %a, %b, %c;",
            "vshl.u32.u32.u32 %d, %a, %b;", "vset.u32.u32.xx %d, %a, %b;",
            "vmad.u32.u32.u32.shr9 %d, %a, %b, %c;", "vadd.f32.u32.u32 %d, %a, %b;",
            "vadd.u32.u32.u32 %d, -%a, %b;", "vadd.sat.u32.u32.u32 %d, %a, %b;",
            "vmad.s32.s32.s32 -%d, %a, %b, %c;", "vadd4.u32.u32.u32 %d, %a.b1024, %b, %c;"]
    return out


def test_video_table_and_validator_agree():
    contexts = [("sm_90a", "9.0"), ("sm_20", "2.0"), ("sm_21", "2.3"), ("sm_30", "3.0")]
    assert_agree(video_texts(), contexts)


def mma_sp_texts():
    """The forms of isa/mma_sp.py LEGAL and their neighbours: every shape, accumulator pair,
    variant, .satfinite and element type around each row."""
    out = []
    types = sorted(mma_sp.TYPES - {"f32", "s32", "ue8m0", "ue4m3"})
    pairs = [(t, t) for t in types] + [("u8", "s8"), ("e4m3", "e5m2"), ("e2m1", "e3m2"),
                                       ("f16", "bf16")]
    accums = [("f16", "f16"), ("f32", "f32"), ("s32", "s32"), ("f16", "f32")]
    kinds = [None, "f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4"]
    scales = {None: [None], "f8f6f4": [None], "mxf8f6f4": [("ue8m0", None), ("ue8m0", "1X")],
              "mxf4": [("ue8m0", None), ("ue8m0", "2X"), ("ue4m3", "2X")],
              "mxf4nvf4": [("ue8m0", "2X"), ("ue4m3", "4X"), ("ue8m0", "4X"), ("ue8m0", None)]}
    for kind, k, (d, c), (a, b), v, sat in itertools.product(
            kinds, (8, 16, 32, 64, 128), accums, pairs, (".sp", ".sp::ordered_metadata"),
            (False, True)):
        if kind and (k not in (64, 128) or a not in mma_sp.F8F6F4 or sat):
            continue
        if not kind and a in ("e3m2", "e2m3", "e2m1"):
            continue
        for sc in scales[kind]:
            q = f"mma{v}.sync.aligned.m16n8k{k}.row.col{'.satfinite' if sat else ''}"
            if kind:
                q += f".kind::{kind}"
            if sc:
                q += ".block_scale" + (f".scale_vec::{sc[1]}" if sc[1] else "")
            q += f".{d}.{a}.{b}.{c}" + (f".{sc[0]}" if sc else "")
            dv = "{%r1, %r2}" if d == "f16" else "{%r1, %r2, %r3, %r4}"
            ab = "{%r5, %r6, %r7, %r8}"
            ops = f"{dv}, {ab}, {ab}, {dv}, %r9, 0"
            if sc:
                ops += ", %r10, {%r11, %r12}, %r13, {%r14, %r15}"
            out.append(f"{q} {ops};")
    return out


def test_mma_sp_table_and_validator_agree():
    contexts = [(t, "9.0") for t in ("sm_80", "sm_89", "sm_90a", "sm_100a", "sm_120", "sm_120a",
                                     "sm_120f", "sm_121a", "sm_121f")]
    # the PTX ISA notes (7.1, 8.4, 8.5, 8.7, 9.1) are in the one table now: judge them too
    contexts += [(t, v) for t in ("sm_89", "sm_120a") for v in ("8.3", "8.4", "8.6", "9.1")]
    assert_agree(mma_sp_texts(), contexts)


def tcgen05_mma_texts(n=1500, seed=5):
    """A fixed random sample of the Tcgen05Mma qualifier space (kind, .sp, .ws, .cta_group,
    .block_scale, scale vector, collector, .ashift, A in Tensor Memory, optional operands)."""
    import random
    rnd = random.Random(seed)
    space = [("f16", "tf32", "f8f6f4", "i8", "mxf8f6f4", "mxf4", "mxf4nvf4"), (False, True),
             (False, True), (1, 2), (False, True), (None, "1X", "2X", "4X", "block16", "block32"),
             (None, "a::fill", "a::lastuse", "b1::use", "b0::discard"), (False, True),
             (False, True), (None, "dol", "sid", "zcm")]
    out = set()
    while len(out) < n:
        kind, sp, ws, cg, bs, sv, coll, ashift, a_tmem, opt = (rnd.choice(s) for s in space)
        if sv and not bs:
            sv = None if rnd.random() < 0.8 else sv
        m = Tcgen05Mma(kind, cg, sp, ws, a_tmem, bs, sv, coll, ashift,
                       scale_input_d=3 if opt == "sid" else None,
                       has_disable_output_lane=opt == "dol", has_zero_column_mask=opt == "zcm")
        out.add(m.ptx())
    return sorted(out)


def test_tcgen05_mma_table_and_validator_agree():
    contexts = [(t, v) for t in ("sm_100a", "sm_100f", "sm_103a", "sm_110a", "sm_110f")
                for v in ("8.6", "8.7", "8.8", "9.0")]
    assert_agree(tcgen05_mma_texts(), contexts)


def tmem_texts():
    out = []
    for shape in tmem_ldst.SHAPES + ("64x64b",):
        split = ", 4" if shape == "16x32bx2" else ""
        for num in tmem_ldst.NUMS + (256,):
            try:
                n = tmem_ldst.num_registers(shape, num)
            except PtxsimError:
                n = 1
            vec = "{" + ", ".join(f"%r{i}" for i in range(min(n, 60))) + "}"
            for pack in ("", ".pack::16b"):
                out.append(f"tcgen05.ld.sync.aligned.{shape}.x{num}{pack}.b32 {vec}, [%r63]{split};")
            for unpack in ("", ".unpack::16b"):
                out.append(f"tcgen05.st.sync.aligned.{shape}.x{num}{unpack}.b32 [%r63]{split}, {vec};")
            for op, t, mod in itertools.product(("min", "max", "add"), ("f32", "u32", "s32"),
                                                ("", ".abs", ".NaN")):
                out.append(f"tcgen05.ld.red.sync.aligned.{shape}.x{num}.{op}{mod}.{t} {vec}, %r62, "
                           f"[%r63]{split};")
    for shape, mc, fmt in itertools.product(
            tuple(tmem_cp.CP_SHAPES) + ("32x256b",),
            ("", ".warpx2::02_13", ".warpx2::01_23", ".warpx4"),
            ("", ".b8x16.b6x16_p32", ".b8x16.b4x16_p64", ".b8x16.b4x16_p32")):
        out.append(f"tcgen05.cp.cta_group::1.{shape}{mc}{fmt} [%r1], %rd1;")
    for n in (0, 16, 32, 48, 64, 96, 128, 256, 512, 1024):
        out.append(f"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], {n};")
        out.append(f"tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r1, {n};")
    return out + tmem_sync_texts()


def tmem_sync_texts():
    """The other Tensor Memory rows with each slot filled every way and near misses: a required
    slot left out, a slot repeated, a foreign qualifier, an operand too many or of a wrong kind,
    the .16x32bx2 immediate missing, .dst_fmt.src_fmt reversed or alone."""
    out = []
    for cg in ("", ".cta_group::1", ".cta_group::2", ".cta_group::1.cta_group::2"):
        out += [f"tcgen05.alloc{cg}.sync.aligned.shared::cta.b32 [%r1], 32;",
                f"tcgen05.alloc{cg}.sync.aligned.b32 [%r1], %r2;",
                f"tcgen05.dealloc{cg}.sync.aligned.b32 %r1, %r2;",
                f"tcgen05.relinquish_alloc_permit{cg}.sync.aligned;",
                f"tcgen05.shift{cg}.down [%r1];", f"tcgen05.shift{cg} [%r1];",
                f"tcgen05.cp{cg}.128x256b [%r1], %rd1;"]
    out += ["tcgen05.alloc.cta_group::1.aligned.shared::cta.b32 [%r1], 32;",
            "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 %r1, 32;",
            "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32, 32;",
            "tcgen05.dealloc.cta_group::1.sync.aligned.b32 [%r1], 32;",
            "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned.b32;",
            "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned %r1;",
            "tcgen05.shift.cta_group::1.down.up [%r1];", "tcgen05.shift.cta_group::1.down %r1;"]
    for w in ("::ld", "::st", "", "::mma", "::ld::st"):
        for sa in (".sync.aligned", ".sync", ".aligned.sync"):
            out.append(f"tcgen05.wait{w}{sa};")
    for k in ("::before_thread_sync", "::after_thread_sync", "", "::before_thread_sync.sync"):
        out += [f"tcgen05.fence{k};", f"tcgen05.fence{k} %r1;"]
    for cg, sc, mc, ops in itertools.product(
            (".cta_group::1", ".cta_group::2", ""), ("", ".shared::cluster"),
            ("", ".multicast::cluster"), ("[%rd1]", "[%rd1], %rs1", "[%rd1], %r1")):
        out.append(f"tcgen05.commit{cg}.mbarrier::arrive::one{sc}{mc}.b64 {ops};")
    out += ["tcgen05.commit.cta_group::1.b64 [%rd1];",
            "tcgen05.commit.cta_group::1.mbarrier::arrive::one.b32 [%rd1];",
            "tcgen05.cp.cta_group::1.128x256b.b6x16_p32.b8x16 [%r1], %rd1;",
            "tcgen05.cp.cta_group::1.128x256b.b8x16 [%r1], %rd1;",
            "tcgen05.cp.cta_group::1.128x256b.b4x16_p64 [%r1], %rd1;",
            "tcgen05.cp.cta_group::1.128x256b [%r1], %r1;",
            "tcgen05.cp.cta_group::1.128x256b [%r1];",
            "tcgen05.ld.sync.aligned.16x32bx2.x2.b32 {%r1, %r2}, [%r3];",
            "tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r1, %r2}, [%r3], 4;",
            "tcgen05.st.sync.aligned.16x32bx2.x2.b32 [%r3], {%r1, %r2};",
            "tcgen05.st.sync.aligned.32x32b.x2.pack::16b.b32 [%r3], {%r1, %r2};",
            "tcgen05.ld.sync.aligned.32x32b.x2.unpack::16b.b32 {%r1, %r2}, [%r3];",
            "tcgen05.ld.sync.aligned.32x32b.x2.x4.b32 {%r1, %r2}, [%r3];",
            "tcgen05.ld.sync.aligned.32x32b.16x64b.x2.b32 {%r1, %r2}, [%r3];",
            "tcgen05.ld.sync.aligned.x2.b32 {%r1, %r2}, [%r3];",
            "tcgen05.ld.aligned.32x32b.x2.b32 {%r1, %r2}, [%r3];",
            "tcgen05.ld.sync.aligned.32x32b.x2.b32 [%r3], {%r1, %r2};",
            "tcgen05.ld.red.sync.aligned.32x32b.x2.min.b32 {%r1, %r2}, %r4, [%r3];",
            "tcgen05.ld.red.sync.aligned.32x32b.x2.min.pack::16b.f32 {%r1, %r2}, %r4, [%r3];",
            "tcgen05.ld.red.sync.aligned.32x32b.x2.max.abs.NaN.f32 {%r1, %r2}, %r4, [%r3];",
            "tcgen05.ld.red.sync.aligned.32x32b.x2.max.f32 {%r1, %r2}, [%r3];"]
    return out


# every Target ISA note of the Tensor Memory rows (TCGEN05, LD_RED_TARGETS, SHIFT_TARGETS) and
# PTX ISA note (8.6, 8.8) is crossed: arch-specific, family and foreign targets, before / after
TMEM_CONTEXTS = [("sm_103a", "9.0"), ("sm_100a", "8.6"), ("sm_100a", "8.5"), ("sm_90a", "9.0"),
                 ("sm_101a", "8.8"), ("sm_101a", "8.7"), ("sm_100f", "8.8"), ("sm_103f", "8.8"),
                 ("sm_110f", "9.0"), ("sm_110a", "9.0"), ("sm_120a", "9.0")]


def test_tmem_tables_and_validator_agree():
    assert_agree(tmem_texts(), TMEM_CONTEXTS[:1])
    assert_agree(tmem_sync_texts(), TMEM_CONTEXTS)
