"""Syntax lines of the PTX ISA as data, and the matcher that judges an instruction against them.

The instruction families without a section in shared/spec (the base instructions of PTX ISA
9.7.1-9.7.15 and 9.7.20-9.7.21: integer, floating point, conversion, data movement, control
flow, synchronisation, warp-level matrix, ...) are written in `base_forms.py` one syntax line at
a time, close to the spec's notation:

    form("add", "{.sat} .s32", "r ri ri")
    form("cvt", "{.frnd} {.ftz} {.sat} .dtype .atype", "r@dtype ri@atype", relaxed=True,
         frnd=".rn .rz .rm .rp", dtype=FLOAT, atype=INT)

* The qualifier pattern lists the elements of the dotted name: a literal (`.s32`), a slot named
  in the keyword arguments (`.dtype`, the spec's `.dtype = { ... }`), alternatives (`.hi|.lo`);
  `{...}` marks an optional element. Qualifiers match elements in any order (ptxas accepts
  `add.s32.sat` as well as `add.sat.s32`); two slots with the same values (cvt's .dtype/.atype)
  take the qualifiers in the order written.
* The operand list gives, per operand, the kinds it may be (letters below), `@T` the type it is
  checked against (a slot of the pattern or a literal type; by default the slot `.type`, else
  the last type element), `?` an optional operand, `!` a negatable predicate, `-` a negatable
  source, `/N` or `/.vec` a vector size.

    r register     i immediate (typed)   n integer immediate (untyped)   s special register
    y symbol (variable, parameter or function name, optionally +offset)
    a address [..]   t tensor address [map, {coords}]   v vector {..}   p predicate register
    q a predicate pair p|q (or one predicate)   Q a register|predicate pair (d|p, or d)
    l label   g parenthesised group   x anything (not checked)

Register operands follow ptxas's type rules (PTX ISA 5.2.2 "Restricted Use of Sub-Word Sizes"
and 6.4 "Operand Type Information"; the matrices in `reg_ok` were read off ptxas 13.5, one
instruction type x register type at a time): exact size for most instructions, a wider register
for ld / st / cvt (`relaxed=True`, "Operand Size Exceeding Instruction-Type Size").
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ptxsim.isa.legality import REPEATABLE
from ptxsim.isa.targets import ANY, Req
from ptxsim.ptx.instruction import (Address, Group, Immediate, Label, Register, RegisterPair,
                                    SpecialRegister, Vector)

# ------------------------------------------------------------------------------------ types
# instruction type -> (size in bits, class). Classes: b (bit), u, s, f (f32/f64), f16, bf16,
# h2 (f16x2), bh2 (bf16x2), pred, and "o" for the other packed / narrow formats.
TYPE_INFO = {
    ".pred": (1, "pred"), ".b8": (8, "b"), ".b16": (16, "b"), ".b32": (32, "b"),
    ".b64": (64, "b"), ".b128": (128, "b"), ".u8": (8, "u"), ".u16": (16, "u"),
    ".u32": (32, "u"), ".u64": (64, "u"), ".s8": (8, "s"), ".s16": (16, "s"), ".s32": (32, "s"),
    ".s64": (64, "s"), ".f16": (16, "f16"), ".bf16": (16, "bf16"), ".f32": (32, "f"),
    ".f64": (64, "f"), ".f16x2": (32, "h2"), ".bf16x2": (32, "bh2"), ".u16x2": (32, "u"),
    ".s16x2": (32, "s"), ".u8x4": (32, "u"), ".s8x4": (32, "s"), ".tf32": (32, "o"), ".f32x2": (64, "o"), ".e4m3": (8, "o"),
    ".e5m2": (8, "o"), ".e4m3x2": (16, "o"), ".e5m2x2": (16, "o"), ".e2m3x2": (16, "o"),
    ".e3m2x2": (16, "o"), ".e2m1x2": (8, "o"), ".ue8m0x2": (16, "o"), ".e4m3x4": (32, "o"),
    ".e5m2x4": (32, "o"), ".e2m3x4": (32, "o"), ".e3m2x4": (32, "o"), ".e2m1x4": (16, "o"),
    ".s4": (4, "o"), ".u4": (4, "o"), ".b1": (1, "o"), ".s2": (2, "o"), ".u2": (2, "o"),
    ".e2m1": (4, "o"), ".e2m3": (8, "o"), ".e3m2": (8, "o"), ".ue8m0": (8, "o"),
    ".ue4m3": (8, "o"), ".s2f6x2": (16, "o"),
}
# the types a `.reg` may declare (ptxas 13.5: `.reg .bf16` is a syntax error, `.reg .u16x2`
# "may only be used as an instruction type")
REG_TYPES = frozenset(".pred .b8 .b16 .b32 .b64 .b128 .u8 .u16 .u32 .u64 .s8 .s16 .s32 .s64 "
                      ".f16 .f16x2 .f32 .f64".split())
_REG_INFO = {t: (TYPE_INFO[t][0], TYPE_INFO[t][1]) for t in REG_TYPES}


def reg_ok(itype: str, rtype: str, relaxed: bool = False) -> bool:
    """May a register declared `rtype` be an operand of an instruction of type `itype`?

    Measured on ptxas 13.5 (mov / add / ld / st / cvt, every type against every register type):
    * integer u/s N: a bit or integer register of N bits (of >= N bits when relaxed), or an
      .f16x2 register where 32 bits fit;
    * bit bN: any register of N bits (>= N when relaxed), floats included, not .pred;
    * .f32 / .f64: that float type, or a bit register of the size (>= when relaxed);
    * .f16: .f16 or .b16 (or a wider bit register when relaxed); .f16x2: .f16x2 or .b32;
    * .bf16, .bf16x2, .tf32 and the other packed formats: a bit register of exactly their size;
    * .pred: .pred (and, as ptxas accepts it, an .f16x2 register).
    """
    info = TYPE_INFO.get(itype)
    rinfo = _REG_INFO.get(rtype)
    if info is None or rinfo is None:
        return True
    isz, icl = info
    rsz, rcl = rinfo
    if icl == "pred":
        return rtype in (".pred", ".f16x2")
    if rtype == ".pred":
        return False
    size = rsz >= isz if relaxed else rsz == isz
    if icl in ("u", "s"):
        return (size and rcl in ("b", "u", "s")) or (rtype == ".f16x2" and isz <= 32 and
                                                    (relaxed or isz == 32))
    if icl == "b":
        return size
    if icl == "f":
        return rtype == itype or (rcl == "b" and size)
    if icl == "f16":
        return rtype == ".f16" or (rcl == "b" and size)
    if icl == "h2":
        return rtype == ".f16x2" or (rcl == "b" and rsz == 32)
    return rcl == "b" and rsz == isz


def imm_ok(itype: str | None, imm: Immediate) -> bool:
    """May the constant `imm` be an operand of type `itype` (ptxas 13.5, measured): integer
    constants for integer, bit and predicate types; for .f32/.f64 floating-point constants only
    (decimal, 0f, 0d); for .b32 also a 0f constant, for .b64 a decimal or 0d one; the 16-bit and
    packed float types take no constant at all."""
    if itype is None:
        return True
    info = TYPE_INFO.get(itype)
    if info is None:
        return True
    isz, icl = info
    if not imm.is_float:
        return icl in ("u", "s", "b", "pred") and not itype.endswith(("x2", "x4"))
    if icl == "f":
        return True
    if icl == "b":
        return (isz == 32 and imm.width == 32) or (isz == 64 and imm.width in (None, 64))
    return False


INT64_RANGE = (-(1 << 63), (1 << 64) - 1)

# Special registers (PTX ISA 10): width, and whether they are .x/.y/.z vectors.
SREG_VECTOR = frozenset("%tid %ntid %ctaid %nctaid %clusterid %nclusterid %cluster_ctaid "
                        "%cluster_nctaid".split())
SREG_64 = frozenset(["%clock64", "%gridid", "%globaltimer", "%total_smem_size_64"]
                    + [f"%pm{i}_64" for i in range(8)])
SREG_PRED = frozenset(["%is_explicit_cluster"])


def sreg_type(op: SpecialRegister) -> str:
    if op.name in SREG_64:
        return ".u64"
    if op.name in SREG_PRED:
        return ".pred"
    return ".u32"


# ------------------------------------------------------------------------------------ forms
@dataclass(frozen=True)
class Elem:
    """One qualifier position: its name (slot or literal), legal values, required or not."""
    name: str
    values: frozenset
    required: bool
    order: tuple = ()


@dataclass(frozen=True)
class OpSpec:
    kinds: str
    type: str | None          # a slot name (".dtype"), a literal type (".u32") or None
    optional: bool = False
    neg: bool = False
    minus: bool = False
    vec: object = None        # int, a slot name (".vec") or None
    text: str = ""
    cond: frozenset = None    # present exactly when one of these qualifiers is (`(.q)r`)
    values: object = None     # an immediate's legal values: (lo, hi) from `#lo..hi`, or a
                              # frozenset from `#a,b,c`


@dataclass(frozen=True)
class BForm:
    opcode: str
    elems: tuple
    ops: tuple
    since: tuple = (1, 0)
    req: Req = ANY
    relaxed: bool = False
    pattern: str = ""
    operands: str = ""
    section: str = ""
    extra: object = None       # a function (inst, chosen, ctx) -> message | None

    def leading(self):
        return [e for e in self.elems if e.order]

    def specs(self, chosen: dict) -> list:
        """The operands this form takes with these qualifiers (conditional ones resolved)."""
        have = set(chosen.values())
        return [o for o in self.ops if o.cond is None or o.cond & have]

    def syntax(self) -> str:
        return f"{self.opcode}{self.pattern.replace(' ', '')} {self.operands}".strip()


FORMS: dict[str, list[BForm]] = {}
# Qualifiers ptxas 13.5 silently ignores on an instruction that has no use for them (appended to
# `mov.b32`, `add.u32`, `ld.global.u32` each is accepted: measured over the whole qualifier
# vocabulary): they are judged only where they mean something.
IGNORABLE = frozenset(
    ".acc::f16 .acc::f32 .b4x16_p64 .b6x16_p32 .b8x16 .box_dim .element_stride .elemtype "
    ".fill_mode .finite .global_address .global_dim .global_stride .infinite .interleave_layout "
    ".normal .notanumber .number .rank .subnormal .swizzle_atomicity .swizzle_mode".split())
# qualifier -> (PTX ISA version, Req): notes that hold wherever the qualifier appears
QUALIFIER_NOTES: dict = {}


def _parse_pattern(pattern: str, slots: dict) -> tuple:
    elems = []
    for tok in pattern.split():
        order = ()
        while tok[:1] in "^<":
            order += (tok[0],)
            tok = tok[1:]
        opt = tok.startswith("{") and tok.endswith("}")
        body = tok[1:-1] if opt else tok
        alts = body.split("|")
        values: list = []
        for a in alts:
            key = a
            if key in slots:
                vals = slots[key]
                values.extend(vals.split() if isinstance(vals, str) else vals)
            else:
                values.append(a)
        name = alts[0]
        if any(e.name == name for e in elems):          # `.bf16 .bf16`: keep both apart
            name = f"{name}#{len(elems)}"
        elems.append(Elem(name, frozenset(values), not opt, order))
    return tuple(elems)


def _parse_ops(text: str, elems: tuple) -> tuple:
    ops = []
    names = {e.name for e in elems}
    for tok in text.split():
        cond = None
        if tok.startswith("("):
            c, tok = tok[1:].split(")", 1)
            cond = frozenset(c.split("|"))
        optional = tok.startswith("?")
        tok = tok.lstrip("?")
        neg = tok.startswith("!")
        tok = tok.lstrip("!")
        minus = tok.startswith("-")
        tok = tok.lstrip("-")
        values = None
        if "#" in tok:
            tok, v = tok.split("#", 1)
            if ".." in v:
                lo, hi = v.split("..")
                step = 1
                if "%" in hi:
                    hi, step = hi.split("%")
                values = (int(lo, 0), int(hi, 0), int(step))
            else:
                values = frozenset(int(x, 0) for x in v.split(","))
        vec = None
        if "/" in tok:
            tok, v = tok.split("/", 1)
            vec = int(v) if v.isdigit() else v
        typ = "default"
        if "@" in tok:
            tok, typ = tok.split("@", 1)
            if typ == "-":
                typ = None
            elif typ == "2x":
                typ = "2x"
            elif typ.startswith("~"):             # `~dtype`: .f16 -> .f16x2 (mma fragments)
                if "." + typ[1:] not in names:
                    raise ValueError(f"operand type {typ!r} is not a slot of the pattern")
                typ = "~." + typ[1:]
            elif not typ.startswith("."):
                typ = "." + typ
                if typ not in names:
                    raise ValueError(f"operand type {typ!r} is not a slot of the pattern")
                typ = "$" + typ                  # a slot reference (even one named like a type)
            elif typ not in TYPE_INFO:
                raise ValueError(f"operand type {typ!r} is not a PTX type")
        ops.append(OpSpec(tok, typ, optional, neg, minus, vec, tok, cond, values))
    return tuple(ops)


def form(opcode: str, pattern: str = "", operands: str = "", *, since=None, req: Req = ANY,
         relaxed: bool = False, section: str = "", extra=None, **slots) -> BForm:
    """Register one syntax line (see the module docstring). Slot values are given as keyword
    arguments without the dot: `type=".u16 .u32"` defines `.type`."""
    slots = {"." + k: v for k, v in slots.items()}
    elems = _parse_pattern(pattern, slots)
    f = BForm(opcode, elems, _parse_ops(operands, elems), since or (1, 0), req, relaxed,
              pattern, operands, section, extra)
    FORMS.setdefault(opcode, []).append(f)
    return f


# ----------------------------------------------------------------------------------- matching
@dataclass
class Match:
    form: BForm
    chosen: dict = field(default_factory=dict)     # element name -> qualifier
    problems: list = field(default_factory=list)   # qualifier problems (strings)


SPACE_NAMES = frozenset(".global .shared .shared::cta .shared::cluster .local .param "
                        ".param::entry .param::func .const".split())


def match_qualifiers(f: BForm, quals, fixed: int = 0, position=None) -> Match:
    """`fixed`: how many leading qualifiers belong to the opcode's name (`mbarrier.init`),
    which may not be repeated. `position`: qualifier -> its index in the instruction as written
    (when some were set aside)."""
    quals = list(quals)
    heads = [e.name for e in f.elems if "^" in e.order]
    m = Match(f, {e.name: None for e in f.elems})
    for k, q in enumerate(quals):
        slot = next((e for e in f.elems if m.chosen[e.name] is None and q in e.values), None)
        if slot is None:
            owner = next((e for e in f.elems if m.chosen[e.name] == q), None)
            if owner is not None and q in REPEATABLE and quals.index(q) >= fixed:
                continue       # a flag written twice (`sin.approx.approx`): ptxas accepts it
            if any(q in e.values for e in f.elems):
                m.problems.append(f"repeated qualifier '{q}'")
            else:
                m.problems.append(f"qualifier '{q}'")
            continue
        m.chosen[slot.name] = q
    for kind, names in (("types", TYPE_INFO), ("state spaces", SPACE_NAMES)):
        seq = [m.chosen[e.name] for e in f.elems
               if m.chosen[e.name] is not None and all(v in names for v in e.values)]
        if len(seq) > 1 and [q for q in quals if q in seq] != seq:
            m.problems.append(f"the {kind} are in the wrong order ({''.join(seq)})")
    for e in f.elems:
        q = m.chosen[e.name]
        if q is not None and e.order:
            pos = position[q] if position else quals.index(q)
            if "^" in e.order and pos != sum(1 for h in heads[:heads.index(e.name)]
                                             if m.chosen[h] is not None):
                m.problems.append(f"'{q}' must directly follow the opcode")
            if "<" in e.order and any(x in TYPE_INFO for x in quals[:pos]):
                m.problems.append(f"'{q}' must come before the type")
        if e.required and m.chosen[e.name] is None:
            vals = " ".join(sorted(e.values))
            m.problems.append(f"missing {e.name} ({vals})" if len(e.values) > 1 else
                              f"missing {e.name}")
    return m


def default_type(f: BForm, chosen: dict) -> str | None:
    if ".type" in chosen and chosen[".type"]:
        return chosen[".type"]
    for e in reversed(f.elems):
        q = chosen.get(e.name)
        if q in TYPE_INFO:
            return q
    return None


_WIDE = {".u16": ".u32", ".u32": ".u64", ".s16": ".s32", ".s32": ".s64"}


def resolve_type(spec: OpSpec, f: BForm, chosen: dict) -> str | None:
    if spec.type is None:
        return None
    if spec.type == "default":
        return default_type(f, chosen)
    if spec.type == "2x":                       # mul.wide / mad.wide: twice the width
        return _WIDE.get(default_type(f, chosen))
    if spec.type in TYPE_INFO:
        return spec.type
    if spec.type.startswith("~"):
        t = chosen.get(spec.type[1:])
        return {".f16": ".f16x2", ".bf16": ".bf16x2"}.get(t, t)
    return chosen.get(spec.type[1:])
