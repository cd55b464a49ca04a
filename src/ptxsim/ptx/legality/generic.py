"""The base-instruction check: an Instruction against its syntax lines (`forms.FORMS`, written
in `base_forms.py`), with the operand rules ptxas applies: kinds, register types, constants,
vector sizes, addresses, special registers, symbols. One diagnostic per instruction, in the
words of the first rule it breaks.

Verdicts depend only on the instruction's text and on the declared types of its registers, so
they are cached per (mnemonic, operand shape, target, PTX version): a module's thousands of
`add.s32 %r.., %r.., %r..` are judged once.
"""
from __future__ import annotations

from ptxsim.ptx.instruction import (Address, Group, Immediate, Label, Register, RegisterPair,
                                    SpecialRegister, Vector)
from ptxsim.ptx.legality import base_forms  # noqa: F401  (fills forms.FORMS)
from ptxsim.ptx.legality.common import Diagnostic
from ptxsim.ptx.legality.forms import (FORMS, IGNORABLE, INT64_RANGE, QUALIFIER_NOTES, SREG_VECTOR, TYPE_INFO, imm_ok,
                                       match_qualifiers, reg_ok, resolve_type, sreg_type)
from ptxsim.ptx.targets import vstr

SPACES = frozenset(".global .shared .shared::cta .shared::cluster .local .param .param::entry "
                   ".param::func .const".split())
_KIND_WORDS = {"r": "a register", "i": "a constant", "n": "an integer constant",
               "I": "an integer constant", "T": "a .branchtargets label",
               "s": "a special register", "y": "a variable or function name",
               "a": "an address [..]", "t": "a tensor address [map, {..}]",
               "v": "a vector {..}", "p": "a predicate", "q": "a predicate (or p|q)",
               "Q": "a register (or d|p)", "l": "a label", "g": "a parenthesised list",
               "x": "an operand", "z": "the sink _"}

_CACHE: dict = {}


def describe(kinds: str) -> str:
    return " or ".join(dict.fromkeys(_KIND_WORDS[k] for k in kinds if k in _KIND_WORDS))


def known_opcode(opcode: str) -> bool:
    return opcode.split(".")[0] in FORMS


class _Env:
    """What the operand checks need to know about the surrounding module."""
    __slots__ = ("regtypes", "symbols", "labels", "address_size", "spaces", "tables", "sigs")

    def __init__(self, regtypes, symbols, labels, address_size, spaces=None, tables=None):
        self.regtypes, self.symbols, self.labels = regtypes, symbols, labels
        self.address_size = address_size
        self.spaces = spaces or {}          # symbol -> state space (".shared", ".param", ...)
        self.tables = tables                # labels naming a .branchtargets list
        self.sigs: dict = {}                # id(operand) -> (operand, id of its _sig)

    def space_of(self, name: str):
        return self.spaces.get(name)

    def rtype(self, name: str):
        if self.regtypes is None:
            return None
        return self.regtypes.get(name)

    def is_register(self, name: str) -> bool:
        return self.regtypes is None or self.regtypes.get(name) is not None

    def is_symbol(self, name: str) -> bool:
        return self.symbols is None or name in self.symbols


def _sig(op, env: _Env):
    """The part of an operand a verdict depends on."""
    if type(op) is Register and env.regtypes is not None:
        # the common case first (a declared-or-not virtual register in a module), the same
        # tuple as below with one table look-up
        rt = env.regtypes.get(op.name)
        return ("R", rt, op.negated, op.minus,
                op.selector if op.selector is None else (op.selector, env.regtypes.vector(op.name)),
                op.name == "_", rt is None)
    if isinstance(op, SpecialRegister):
        return ("S", op.name, op.selector)
    if isinstance(op, Register):
        return ("R", env.rtype(op.name), op.negated, op.minus,
                op.selector if op.selector is None or env.regtypes is None
                else (op.selector, env.regtypes.vector(op.name)),
                op.name == "_", env.regtypes is not None and not env.is_register(op.name))
    if isinstance(op, Immediate):
        return ("I", op.is_float, op.width, op.value if not op.is_float else None)
    if isinstance(op, Address):
        base = op.base
        if base is None:
            b = ("abs",)
        elif env.is_register(base) and (env.regtypes is not None or base.startswith("%")):
            b = ("reg", env.rtype(base))
        else:
            b = ("sym", env.is_symbol(base), base if not env.is_symbol(base) else "",
                 env.space_of(base))
        return ("A", b, None if op.vector is None else _sig(op.vector, env))
    if isinstance(op, Vector):
        return ("V", tuple(_sig(e, env) for e in op.elements))
    if isinstance(op, Label):
        known = env.is_symbol(op.name)
        return ("L", known, op.name in env.labels if env.labels is not None else True,
                op.offset != 0, "" if known else op.name,
                env.tables is None or op.name in env.tables)
    if isinstance(op, RegisterPair):
        return ("P", _sig(op.first, env), _sig(op.second, env))
    if isinstance(op, Group):
        return ("G", len(op.elements))
    return ("?",)


_SIG_IDS: dict = {}                 # operand signature -> a small integer naming it
_NEXT_ID = [0]                      # ids are never reused (a clear keeps old ids unique)


def _sig_id(sg) -> int:
    k = _SIG_IDS.get(sg)
    if k is None:
        if len(_SIG_IDS) > 200_000:
            _SIG_IDS.clear()
        k = _SIG_IDS[sg] = _NEXT_ID[0]
        _NEXT_ID[0] += 1
    return k


def check(inst, ctx, out: list, env: _Env) -> None:
    """Append the diagnostic (if any) of a base instruction to `out`."""
    # per operand object (by identity: nvcc's registers are unique, so hashing the frozen
    # dataclasses cost more than the look-up saves), the id of its signature
    sigs = env.sigs
    osig = []
    for o in inst.operands:
        e = sigs.get(id(o))
        if e is None or e[0] is not o:
            e = sigs[id(o)] = (o, _sig_id(_sig(o, env)))
        osig.append(e[1])
    key = (inst.opcode, inst.qualifiers, tuple(osig), ctx.target.name, ctx.ptx, env.address_size)
    msgs = _CACHE.get(key)
    if msgs is None:
        msgs = _judge(inst, ctx, env)
        if len(_CACHE) > 200_000:
            _CACHE.clear()
        _CACHE[key] = msgs
    for sev, msg in msgs:
        out.append(Diagnostic(sev, msg, inst.loc, inst.opcode))


def _judge(inst, ctx, env) -> tuple:
    name = inst.mnemonic
    # the tables are keyed by the first component: `mbarrier.try_wait.parity` is mbarrier with
    # the qualifiers .try_wait .parity
    head, *rest = inst.opcode.split(".")
    quals = tuple("." + r for r in rest) + tuple(inst.qualifiers)
    forms = FORMS.get(head)
    if forms is None:
        # `tcgen05.mmma`: name the family's word too
        what = head + (quals[0] if head in ("tcgen05", "cp", "mbarrier", "wgmma") and quals else "")
        return (("error", f"'{what}' is not a PTX instruction"),)
    fixed = len(rest)
    matches = [match_qualifiers(f, quals, fixed) for f in forms]
    good = [m for m in matches if not m.problems]
    if not good and any(q in IGNORABLE for q in quals):
        kept = tuple(q for q in quals if q not in IGNORABLE)
        position = {q: k for k, q in reversed(list(enumerate(quals)))}
        retry = [match_qualifiers(f, kept, fixed, position) for f in forms]
        if any(not m.problems for m in retry):
            matches, good = retry, [m for m in retry if not m.problems]
    if not good:
        every = set().union(*(e.values for f in forms for e in f.elems))
        unknown = [q for q in quals if q not in every]
        if unknown:
            return (("error", f"{name}: '{unknown[0]}' is not a qualifier of {head}"),)
        best = min(matches, key=lambda m: len(m.problems))
        return (("error", f"{name}: no form of {head} takes these qualifiers "
                          f"({'; '.join(best.problems)}; nearest form: {best.form.syntax()})"),)
    first = None
    passing = []
    for m in good:
        p = _operands_problem(inst, m, env)
        if p is None:
            passing.append(m)
        elif first is None:
            first = p
    if not passing:
        return (("error", f"{name}: {first}"),)
    notes = None
    for m in passing:
        n = _notes_problem(m.form, ctx) or _qualifier_notes(m.chosen, ctx) or \
            _combination(dict(m.chosen, **{"@op": m.form.opcode}))
        if n is None and m.form.extra is not None:
            n = m.form.extra(inst, m.chosen, ctx)
        if n is None:
            return ()
        notes = notes or n
    return (("error", f"{name}: {notes}"),)


def _notes_problem(f, ctx):
    if ctx.ptx < f.since:
        return f"requires PTX ISA version {vstr(f.since)} or later, module is {vstr(ctx.ptx)}"
    if not f.req.ok(ctx.target, ctx.ptx):
        return f"not supported on .target {ctx.target} (requires {f.req})"
    return None


def _qualifier_notes(chosen, ctx):
    for q in chosen.values():
        note = QUALIFIER_NOTES.get(q)
        if note is None:
            continue
        since, req = note
        if ctx.ptx < since:
            return f"{q} requires PTX ISA version {vstr(since)} or later, module is {vstr(ctx.ptx)}"
        if not req.ok(ctx.target, ctx.ptx):
            return f"{q} is not supported on .target {ctx.target} (requires {req})"
    return None


_SHARED = frozenset({".shared", ".shared::cta", ".shared::cluster"})


def _combination(chosen):
    """Qualifier pairs ptxas refuses whatever the instruction (ptxas 13.5: "Modifier
    '.L2::cache_hint' cannot be applied to '.shared::cluster' space")."""
    have = set(chosen.values())
    space = _space(chosen)
    if ".L2::cache_hint" in have and space in _SHARED:
        return f".L2::cache_hint cannot be applied to the {space} state space"
    sem = have & _ORDERING
    if sem and space in (".param", ".param::entry", ".param::func", ".const", ".local"):
        return f"{sorted(sem)[0]} cannot be applied to the {space} state space"
    dims = have & {".1d", ".2d", ".3d", ".4d", ".5d"}
    if dims and have & {".im2col", ".im2col::w", ".im2col::w::128", ".im2col_no_offs"} \
            and dims & {".1d", ".2d"}:
        return f"{sorted(dims)[0]} cannot be combined with im2col (3d to 5d only)"
    if dims and have & {".tile::gather4", ".tile::scatter4"} and dims != {".2d"}:
        return f"{sorted(dims)[0]} cannot be combined with gather4 / scatter4 (2d only)"
    if chosen.get("@op") in ("st", "ld") and have & {".L2::evict_normal", ".L2::evict_first",
                                                      ".L2::evict_last"}:
        vec, typ = chosen.get(".vec"), chosen.get(".type")
        if not vec or int(vec[2:]) * TYPE_INFO.get(typ, (0,))[0] != 256:
            return (f"{chosen.get('@op')} with an .L2 eviction priority needs a 256-bit type "
                    "(.v8.b32 / .v4.b64)")
    vec, typ = chosen.get(".vec"), chosen.get(".type")
    if vec and typ in TYPE_INFO:
        bits = int(vec[2:]) * TYPE_INFO[typ][0]
        if bits > 256 or (bits > 128 and (have & {".async", ".b128"} or typ == ".b128")):
            return f"{vec}{typ} is {bits} bits: a vector access is at most 128 bits"
        if bits > 128 and space not in ("generic", ".global"):
            return f"a 256-bit access ({vec}{typ}) needs the .global state space"
    return None


_ORDERING = frozenset({".relaxed", ".acquire", ".release", ".volatile", ".acq_rel", ".mmio"})


def _space(chosen: dict):
    sp = [q for q in chosen.values() if q in SPACES]
    return sp[0] if len(sp) == 1 else ("generic" if not sp else None)


def _operands_problem(inst, m, env):
    f, chosen = m.form, m.chosen
    ops = inst.operands
    specs = f.specs(chosen)
    lo, hi = sum(1 for o in specs if not o.optional), len(specs)
    n = len(ops)
    if not lo <= n <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        return f"takes {want} operand{'s' if hi != 1 else ''}, got {n}"
    k = len(specs) - 1
    while len(specs) > n and k >= 0:
        if specs[k].optional:
            del specs[k]
        k -= 1
    space = _space(chosen)
    chosen = dict(chosen)
    chosen["@op"] = f.opcode
    for idx, (op, spec) in enumerate(zip(ops, specs)):
        t = resolve_type(spec, f, chosen)
        p = _operand_problem(op, spec, t, f.relaxed, env, space if "a" in spec.kinds else space, chosen, idx)
        if p:
            return f"operand {idx + 1}: {p}"
    return None


def _imm_values(op, spec):
    v = spec.values
    if v is None:
        return None
    if isinstance(v, tuple):
        if not v[0] <= op.value <= v[1]:
            return f"the constant {op.text} is out of range [{v[0]}, {v[1]}]"
        if op.value % v[2]:
            return f"the constant {op.text} must be a multiple of {v[2]}"
        return None
    if op.value not in v:
        return f"the constant {op.text} must be {' or '.join(map(str, sorted(v)))}"
    return None


def _vec_size(spec, chosen):
    v = spec.vec
    if isinstance(v, int):
        return v
    if v in ("num", "num2"):             # ldmatrix / stmatrix: .x1 .x2 .x4 registers (x2)
        q = chosen.get(".num")
        return None if q is None else int(q[2:]) * (2 if v == "num2" else 1)
    if isinstance(v, str):
        q = chosen.get(v)
        return int(q[2:]) if q else None
    return None


def _operand_problem(op, spec, t, relaxed, env, space, chosen, idx):
    kinds = spec.kinds
    if "x" in kinds:
        return None
    if isinstance(op, SpecialRegister):
        if "s" not in kinds:
            return f"a special register ({op.name}) is not allowed here"
        if op.name in SREG_VECTOR and op.selector is None and t == ".b128":
            return None                      # `mov.b128 %q, %tid`: the whole vector
        if (op.name in SREG_VECTOR) != (op.selector is not None) or \
                (op.selector is not None and op.selector not in (".x", ".y", ".z")):
            return (f"{op.name} needs a .x/.y/.z component" if op.name in SREG_VECTOR else
                    f"{op}: {op.name} has no component {op.selector}")
        st = sreg_type(op)
        if t is not None and not reg_ok(t, st.replace(".u", ".b"), True if relaxed else False):
            if not (op.name in SREG_VECTOR and TYPE_INFO.get(t, (0,))[0] == 16):
                return f"{op.name} ({st[1:]}) does not fit type {t}"
        return None
    if isinstance(op, Register):
        if "P" in kinds and "q" not in kinds:
            return f"expected a predicate pair p|q, got {op.name}"
        if kinds == "z" and op.name != "_":
            return f"the sink _ is expected here, got {op.name}"
        if "v" in kinds and isinstance(spec.vec, str) and spec.vec.startswith(".") \
                and chosen.get(spec.vec):
            return f"{chosen[spec.vec]} needs a vector operand {{..}}, got {op.name}"
        return _register_problem(op, spec, t, relaxed, env, idx)
    if isinstance(op, Immediate):
        if "i" in kinds:
            if not op.is_float and not INT64_RANGE[0] <= op.value <= INT64_RANGE[1]:
                return f"the constant {op.text} does not fit in 64 bits"
            if not imm_ok(t, op):
                return f"the constant {op.text} is not a {t} value"
            return None if op.is_float else _imm_values(op, spec)
        if "n" in kinds:
            if op.is_float:
                return f"expected an integer constant, got {op.text}"
            if not INT64_RANGE[0] <= op.value <= INT64_RANGE[1]:
                return f"the constant {op.text} does not fit in 64 bits"
            return _imm_values(op, spec)
        if "I" in kinds:                    # an integer constant checked against its range
            if op.is_float:
                return f"expected an integer constant, got {op.text}"
            return _imm_values(op, spec)
        return f"expected {describe(kinds)}, got the constant {op.text}"
    if isinstance(op, Address):
        if op.vector is not None:
            if "t" not in kinds:
                return f"expected {describe(kinds)}, got a tensor address {op}"
            if op.offset:
                return f"a tensor map operand takes no offset ({op})"
            for e in op.vector.elements:
                if isinstance(e, Register) and not isinstance(e, SpecialRegister):
                    rt = env.rtype(e.name)
                    if rt is not None and not reg_ok(".b32", rt):
                        return f"tensor coordinate {e} must be a 32-bit register"
                elif not isinstance(e, (Immediate, Register)):
                    return f"tensor coordinate {e} must be a register"
            return _address_base(op, env, space, chosen.get("@op", ""))
        if "a" not in kinds and "t" not in kinds:
            return f"expected {describe(kinds)}, got an address {op}"
        return _address_base(op, env, space, chosen.get("@op", ""))
    if isinstance(op, Vector):
        if "v" not in kinds:
            return f"expected {describe(kinds)}, got a vector {op}"
        size = _vec_size(spec, chosen)
        if isinstance(spec.vec, str) and spec.vec.startswith(".") and size is None:
            size = 1                       # `ld.b32 {%r1}, [a]`: a scalar in braces
        if size is not None and len(op.elements) != size:
            return f"expected a vector of {size} elements, got {len(op.elements)}"
        ekinds = kinds.replace("v", "") or "r"
        sizes = {TYPE_INFO.get(env.rtype(e.name), (0,))[0] for e in op.elements
                 if isinstance(e, Register) and not isinstance(e, SpecialRegister)
                 and env.rtype(e.name) is not None}
        if len(sizes) > 1:
            return f"the elements of {op} are registers of different sizes"
        for e in op.elements:
            if isinstance(e, (Register, Label)) and e.name == "_" and idx == 0:
                continue
            if isinstance(e, (Vector, Address)):
                return f"vector element {e} must be a register"
            p = _operand_problem(e, spec.__class__(ekinds, spec.type), t, relaxed, env, space,
                                 chosen, 1)
            if p:
                return f"vector element: {p}"
        return None
    if isinstance(op, Label):
        if "T" in kinds:
            if env.tables is not None and op.name not in env.tables:
                return f"'{op.name}' is not a label of a .branchtargets list"
            return None
        if kinds == "z" and op.name != "_":
            return f"the sink _ is expected here, got {op.name}"
        if op.name == "_" and op.offset == 0 and idx == 0 and any(k in kinds for k in "rQpvz"):
            return None                          # the sink `_` as a destination
        if op.offset == 0 and "l" in kinds and (env.labels is None or op.name in env.labels):
            return None
        if op.offset == 0 and "l" in kinds and "y" not in kinds:
            return None                          # the validator words a missing label
        if "y" in kinds:
            if not env.is_symbol(op.name):
                return f"unknown symbol '{op.name}'"
            return None
        if "l" in kinds:
            return f"'{op.name}' is not a label in scope"
        if env.regtypes is not None and not env.is_symbol(op.name):
            return f"unknown symbol '{op.name}'"
        return f"expected {describe(kinds)}, got the name {op.name}"
    if isinstance(op, RegisterPair):
        if "q" in kinds or "P" in kinds:
            for r in (op.first, op.second):
                rt = env.rtype(r.name)
                if rt is not None and rt != ".pred":
                    return f"{r} must be a predicate"
            return None
        if "Q" in kinds:
            p = _register_problem(op.first, spec, t, relaxed, env, idx)
            if p:
                return p
            rt = env.rtype(op.second.name)
            if rt is not None and rt != ".pred":
                return f"{op.second} must be a predicate"
            return None
        return f"expected {describe(kinds)}, got a pair {op}"
    if isinstance(op, Group):
        return None if "g" in kinds else f"expected {describe(kinds)}, got a list {op}"
    return f"expected {describe(kinds)}"


def _register_problem(op, spec, t, relaxed, env, idx):
    kinds = spec.kinds
    if op.name == "_" and ("r" in kinds or "Q" in kinds or "p" in kinds) and idx == 0:
        return None
    if op.minus and not spec.minus:
        return f"'-{op.name}' cannot be negated here"
    rt = env.rtype(op.name)           # None when undeclared: the validator reports that
    if "p" in kinds or "q" in kinds or "P" in kinds:
        if op.negated and not spec.neg:
            return f"'!{op.name}' cannot be negated here"
        if rt is None or rt == ".pred":
            return None
        if not ("r" in kinds or "Q" in kinds):
            return f"{op.name} ({rt[1:]}) must be a predicate"
    if op.negated:
        return f"'!{op.name}': only predicates can be negated"
    if not ("r" in kinds or "Q" in kinds):
        return f"expected {describe(kinds)}, got the register {op.name}"
    if op.selector is not None:
        n = env.regtypes.vector(op.name) if env.regtypes is not None else 0
        comps = (".x", ".y", ".z", ".w", ".r", ".g", ".b", ".a")
        if n is None:
            return f"{op.name}{op.selector}: a scalar register has no component {op.selector}"
        if n and op.selector not in comps:
            return f"{op.name}{op.selector}: no component {op.selector} (.x .y .z .w)"
    if rt is not None and t is not None and not reg_ok(t, rt, relaxed):
        return f"{op.name} is a {rt[1:]} register, which does not fit type {t}"
    return None


# instructions whose 32-bit generic / global addresses ptxas refuses under .address_size 64
# ("32-Bit ABI ... is not supported"); the bulk copies and prefetches take them
_ABI_CHECKED = frozenset({"ld", "st", "atom", "red", "ldu", "prefetch", "prefetchu", "multimem",
                          "mbarrier"})


def _address_base(op: Address, env, space, opcode=""):
    base = op.base
    if base is None:
        if space != ".local":
            return "an absolute address [N] is allowed only in .local"
        return None
    if env.regtypes is not None and env.is_register(base):
        rt = env.rtype(base)
        size, cls = TYPE_INFO.get(rt, (0, ""))
        if cls not in ("b", "u", "s") or size > 64:
            return f"address register {base} is a {rt[1:]} register (an integer or bit register is needed)"
        if size < 32 and opcode not in _ABI_CHECKED and opcode not in ("ldmatrix", "stmatrix"):
            return f"address register {base} is {size} bits; this address needs 32 or 64"
        if size == 32 and env.address_size == 64 and space in ("generic", ".global") \
                and opcode in _ABI_CHECKED:
            return (f"address register {base} is 32 bits; {space if space != 'generic' else 'generic'}"
                    " addresses are 64 bits (.address_size 64)")
        return None
    if base.startswith("%") and env.regtypes is not None:
        return f"unknown symbol '{base}'"
    if env.regtypes is not None and not env.is_symbol(base):
        return f"unknown symbol '{base}'"
    sym_space = env.space_of(base)
    if sym_space and opcode == "mbarrier" and not sym_space.startswith(".shared"):
        return f"{base} is a {sym_space} variable; an mbarrier is in shared memory"
    if sym_space and space is not None:
        if space == "generic" and sym_space == ".param":
            return f"{base} is a kernel parameter: address it with ld.param"
        if space != "generic" and _space_family(space) != _space_family(sym_space):
            return f"{base} is a {sym_space} variable, the instruction addresses {space}"
    return None


def _space_family(sp: str) -> str:
    return sp.split("::")[0]
