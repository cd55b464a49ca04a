"""PTX text -> Module / Instruction objects (lark LALR, contextual lexer).

`parse_module(text, filename=None)` parses a whole module (what nvcc, Triton and the CuTe DSL
emit); `parse_instruction(text)` parses one instruction, optionally predicated, `;` optional.
Syntax errors raise `PtxSyntaxError` with line and column.
"""
from __future__ import annotations

import functools
import re
from typing import NamedTuple

import lark
from lark import Token, Transformer, v_args

from ptxsim.errors import PtxSyntaxError
from ptxsim.ptx.grammar import GRAMMAR
from ptxsim.ptx.instruction import (Address, Group, Immediate, Instruction, Label, Predicate,
                                    Register, RegisterPair, SourceLoc, SpecialRegister, Vector,
                                    float_immediate, int_immediate, split_mnemonic)
from ptxsim.ptx.module import (Block, Directive, Function, LabelDef, Module, Param, RegDecl,
                               RegisterTable, Variable)

# PTX ISA 10 "Special Registers" (base names; `.x/.y/.z` components are selectors).
SPECIAL_REGISTERS = frozenset(
    "%tid %ntid %laneid %warpid %nwarpid %ctaid %nctaid %smid %nsmid %gridid "
    "%is_explicit_cluster %clusterid %nclusterid %cluster_ctaid %cluster_nctaid "
    "%cluster_ctarank %cluster_nctarank %lanemask_eq %lanemask_le %lanemask_lt %lanemask_ge "
    "%lanemask_gt %clock %clock_hi %clock64 %globaltimer %globaltimer_lo %globaltimer_hi "
    "%total_smem_size %aggr_smem_size %dynamic_smem_size %current_graph_exec "
    "%reserved_smem_offset_begin %reserved_smem_offset_end %reserved_smem_offset_cap "
    "%reserved_smem_offset_0 %reserved_smem_offset_1".split()
    + [f"%pm{i}" for i in range(8)] + [f"%pm{i}_64" for i in range(8)]
    + [f"%envreg{i}" for i in range(32)])

class _Attr(NamedTuple):
    kind: str
    value: object


class _Decl(NamedTuple):
    name: str
    dims: tuple


class _RegItem(NamedTuple):
    name: str
    count: int | None


class _Init(NamedTuple):
    value: object


def _type_of(attrs) -> str | None:
    """The element type among declaration attributes (not .ptr, a state space, or .vN)."""
    return next((a for a in attrs if a not in (".ptr", ".global", ".shared", ".const", ".local")
                 and not re.fullmatch(r"\.v\d+", a) and not a.startswith(".attribute(")),
                None)


# Operand positions that name a branch target / callee, not a register.
_LABEL_OPCODES = frozenset({"bra", "brx", "call"})


def _loc(tok, file=None) -> SourceLoc:
    return SourceLoc(getattr(tok, "line", None), getattr(tok, "column", None), file)


def _name_operand(tok: str) -> Register | Label:
    base, dot, sel = str(tok).partition(".")
    sel = dot + sel if dot else None
    if base.startswith("%"):
        cls = SpecialRegister if base in SPECIAL_REGISTERS else Register
        return cls(base, sel)
    if sel:                                   # a bare register with a selector: `a.b0`
        return Register(base, sel)
    return Label(base)


@v_args(inline=True)
class _Build(Transformer):
    def __init__(self, filename=None):
        super().__init__()
        self._fname = filename

    # -- operands -----------------------------------------------------------------------
    def reg(self, name):
        return _name_operand(name)

    def negreg(self, _neg, name):
        r = _name_operand(name)
        cls = Register if isinstance(r, Label) else type(r)
        return cls(r.name, getattr(r, "selector", None), negated=True)

    def minusreg(self, name):
        r = _name_operand(name)
        cls = Register if isinstance(r, Label) else type(r)
        return cls(r.name, getattr(r, "selector", None), minus=True)

    def regpair(self, a, b):
        ra, rb = _name_operand(a), _name_operand(b)
        ra = ra if isinstance(ra, Register) else Register(ra.name)
        rb = rb if isinstance(rb, Register) else Register(rb.name)
        return RegisterPair(ra, rb)

    def symoffset(self, name, off):
        return Label(str(name), int_immediate(str(off)).value)

    def int_imm(self, tok):
        return int_immediate(str(tok))

    def hexfloat_imm(self, tok):
        return float_immediate(str(tok))

    def float_imm(self, tok):
        return float_immediate(str(tok))

    def vector(self, *els):
        return Vector(tuple(e for e in els if e is not None))

    def group(self, *els):
        return Group(tuple(e for e in els if e is not None))

    def addr_base(self, name):
        return (str(name), 0)

    def addr_plus(self, name, off):
        return (str(name), int_immediate(str(off)).value)

    def addr_abs(self, off):
        return (None, int_immediate(str(off)).value)

    def address(self, addr, vec=None):
        return Address(addr[0], addr[1], vec)

    # -- instructions ---------------------------------------------------------------------
    def guard(self, *toks):
        neg = len(toks) == 2
        return Predicate(str(toks[-1]), neg)

    def instruction(self, *items):
        pred = items[0] if isinstance(items[0], Predicate) else None
        rest = items[1:] if pred else items
        op_tok = rest[0]
        opcode, quals = split_mnemonic(str(op_tok))
        operands = tuple(o for o in rest[1:] if o is not None)
        return Instruction(opcode, quals, operands, pred, _loc(op_tok, self._fname))

    def label_def(self, tok):
        return LabelDef(str(tok).rstrip(": \t"), _loc(tok, self._fname))

    # -- declarations ------------------------------------------------------------------------
    def align(self, n):
        return _Attr("align", int_immediate(str(n)).value)

    def attr(self, tok):
        return _Attr("attr", str(tok))

    def var_attribute(self, *toks):
        # 5.4.8: .attribute(.managed) / (.unified(...)) on a .global variable, kept as one attr
        return _Attr("attr", ".attribute(" + ",".join(str(t) for t in toks) + ")")

    def dims(self, *ds):
        return tuple(None if d is None else int_immediate(str(d)).value for d in ds)

    def declarator(self, name, dims=None):
        return _Decl(str(name), dims or ())

    def init_atom(self, tok):
        if tok.type in ("INT", "SIGNED"):
            return int_immediate(str(tok)).value
        if tok.type in ("FLOAT", "HEXFLOAT"):
            return float_immediate(str(tok)).value
        return str(tok)

    def init_sym_offset(self, name, off):
        return (str(name), int_immediate(str(off)).value)

    def init_generic(self, fn, name):
        return (str(fn), str(name))

    def init(self, *vals):
        return _Init(vals[0].value if len(vals) == 1 and isinstance(vals[0], _Init) else
                     vals[0] if len(vals) == 1 else [v.value if isinstance(v, _Init) else v for v in vals])

    def linkage(self, tok):
        return _Attr("linkage", str(tok))

    def var_decl(self, *items):
        linkage = tuple(i.value for i in items if isinstance(i, _Attr) and i.kind == "linkage")
        space_tok = next(i for i in items if isinstance(i, Token) and i.type == "SPACE")
        align = next((i.value for i in items if isinstance(i, _Attr) and i.kind == "align"), None)
        others = tuple(i.value for i in items if isinstance(i, _Attr) and i.kind == "attr")
        typ = _type_of(others)
        init = next((i.value for i in items if isinstance(i, _Init)), None)
        loc = _loc(space_tok, self._fname)
        return [Variable(str(space_tok), d.name, typ, align, d.dims, linkage, others, init, loc)
                for d in items if isinstance(d, _Decl)]

    def reg_item(self, name, count=None):
        return _RegItem(str(name), None if count is None else int_immediate(str(count)).value)

    def reg_decl(self, *items):
        attrs = [i.value for i in items if isinstance(i, _Attr)]
        regs = tuple((i.name, i.count) for i in items if isinstance(i, _RegItem))
        vec = next((int(a[2:]) for a in attrs if re.fullmatch(r"\.v\d+", a)), None)
        return RegDecl(_type_of(attrs), regs, vec)

    def param(self, space, *items):
        align = next((i.value for i in items if isinstance(i, _Attr) and i.kind == "align"), None)
        others = tuple(i.value for i in items if isinstance(i, _Attr) and i.kind == "attr")
        name = next(i for i in items if isinstance(i, Token))
        dims = next((i for i in items if isinstance(i, tuple) and not isinstance(i, _Attr)), None) or ()
        return Param(str(space), str(name), _type_of(others), align, dims, others)

    def params(self, *ps):
        return ("params", [p for p in ps if p is not None])

    def ret_params(self, *ps):
        return ("ret", [p for p in ps if p is not None])

    def perf(self, name, *ints):
        return ("perf", str(name), tuple(int_immediate(str(i)).value for i in ints))

    def pragma(self, *strs):
        return Directive(".pragma", tuple(str(s)[1:-1] for s in strs))

    def loc(self, *items):
        return Directive(".loc", tuple(items[:3]) and tuple(int(str(x)) for x in items[:3]))

    def loc_attr(self, *toks):
        return tuple(str(t) for t in toks)

    def targets(self, kind, *names):
        return Directive(str(kind), tuple(str(n) for n in names), _loc(kind, self._fname))

    def callprototype(self, *items):
        return Directive(".callprototype", tuple(i for i in items if i is not None))

    def body(self, *stmts):
        out = []
        for s in stmts:
            if isinstance(s, list):
                out.extend(s)
            elif s is not None:
                out.append(s)
        return Block(out)

    def function(self, *items):
        linkage = tuple(v for i in items if isinstance(i, tuple) and len(i) == 2 and i[0] == "linkage"
                        for v in [i[1]])
        kind_tok = next(i for i in items if isinstance(i, Token) and i.type == "FUNC_KIND")
        name = next(i for i in items if isinstance(i, Token) and i.type == "NAME")
        params = next((i[1] for i in items if isinstance(i, tuple) and i[0] == "params"), [])
        ret = next((i[1] for i in items if isinstance(i, tuple) and i[0] == "ret"), None)
        directives = {}
        for i in items:
            if isinstance(i, tuple) and i[0] == "perf":
                directives[i[1]] = i[2]
            elif isinstance(i, Directive):
                directives.setdefault(".pragma", ())
                directives[".pragma"] += i.args
        body = next((i for i in items if isinstance(i, Block)), None)
        f = Function(str(kind_tok), str(name), params, ret, linkage, directives, body,
                     _loc(kind_tok, self._fname))
        if body is not None:
            _resolve_registers(f)
        return f

    def file(self, idx, path, *rest):
        return ("file", int(str(idx)), str(path)[1:-1])

    def version(self, tok):
        return ("version", str(tok))

    def target(self, *names):
        return ("target", tuple(str(n) for n in names))

    def address_size(self, n):
        return ("address_size", int(str(n)))

    def section(self, name, body):
        return ("section", str(name), str(body))

    def start(self, *items):
        m = Module(filename=self._fname)
        for it in items:
            if isinstance(it, Function):
                m.functions.append(it)
            elif isinstance(it, list):
                m.variables.extend(it)
            elif isinstance(it, tuple):
                k = it[0]
                if k == "version":
                    m.version = it[1]
                elif k == "target":
                    m.targets = it[1]
                elif k == "address_size":
                    m.address_size = it[1]
                elif k == "file":
                    m.files[it[1]] = it[2]
                elif k == "section":
                    m.sections.append((it[1], it[2]))
        return m


def _resolve_registers(f: Function) -> None:
    """Bare identifiers declared with .reg in a function are registers, not labels/symbols."""
    declared = RegisterTable(f.registers, {p.name: p.type or ".b32" for p in f.params if p.space == ".reg"})
    if not declared.exact and not declared.ranges:
        return

    def fix(op):
        if isinstance(op, Label) and op.offset == 0 and op.name in declared:
            return Register(op.name)
        if isinstance(op, Vector):
            return Vector(tuple(fix(e) for e in op.elements))
        if isinstance(op, Group):
            return Group(tuple(fix(e) for e in op.elements))
        return op

    def walk(block: Block):
        for k, s in enumerate(block.statements):
            if isinstance(s, Instruction) and any(isinstance(o, (Label, Vector, Group)) for o in s.operands):
                block.statements[k] = Instruction(s.opcode, s.qualifiers, tuple(fix(o) for o in s.operands),
                                                  s.predicate, s.loc, s.text)
            elif isinstance(s, Block):
                walk(s)
    walk(f.body)


@functools.lru_cache(maxsize=None)
def _lark() -> lark.Lark:
    return lark.Lark(GRAMMAR, parser="lalr", lexer="contextual", start=["start", "instruction"],
                     maybe_placeholders=True, cache=False)


def _syntax_error(exc: lark.exceptions.LarkError, filename) -> PtxSyntaxError:
    line = getattr(exc, "line", None)
    col = getattr(exc, "column", None)
    if isinstance(exc, lark.exceptions.UnexpectedToken):
        tok = exc.token
        what = "end of input" if tok.type == "$END" else repr(str(tok))
        expected = sorted(exc.expected)
        msg = f"unexpected {what}" + (f" (expected one of {', '.join(expected[:8])})" if expected else "")
    elif isinstance(exc, lark.exceptions.UnexpectedCharacters):
        msg = f"unexpected character {exc.char!r}"
    elif isinstance(exc, lark.exceptions.UnexpectedEOF):
        msg = "unexpected end of input"
    elif isinstance(exc, lark.exceptions.VisitError):
        msg = f"malformed construct ({exc.orig_exc})"
    else:
        msg = str(exc).splitlines()[0]
    return PtxSyntaxError(msg, line if line and line > 0 else None, col if col and col > 0 else None, filename)


def parse_module(text: str, filename: str | None = None) -> Module:
    """Parse a whole PTX module. Raises PtxSyntaxError(line, col) on malformed text."""
    try:
        tree = _lark().parse(text, start="start")
        return _Build(filename).transform(tree)
    except lark.exceptions.VisitError as exc:
        if isinstance(exc.orig_exc, PtxSyntaxError):
            raise exc.orig_exc from None
        raise _syntax_error(exc, filename) from None
    except lark.exceptions.LarkError as exc:
        raise _syntax_error(exc, filename) from None
    except RecursionError:
        raise PtxSyntaxError("nesting too deep", None, None, filename) from None


def parse_instruction(text: str) -> Instruction:
    """Parse one instruction (`[@[!]p] opcode.qualifiers operands[;]`).

    Bare identifiers (`taddr`, `adesc`, as in the spec's examples) are registers, except the
    target of bra / brx / call which stays a Label.
    """
    src = text.strip()
    if not src.endswith(";"):
        src += ";"
    try:
        tree = _lark().parse(src, start="instruction")
        inst = _Build(None).transform(tree)
    except lark.exceptions.VisitError as exc:
        raise _syntax_error(exc, None) from None
    except lark.exceptions.LarkError as exc:
        raise _syntax_error(exc, None) from None
    except RecursionError:
        raise PtxSyntaxError("nesting too deep") from None
    if inst.opcode in _LABEL_OPCODES:
        return inst

    def fix(op):
        if isinstance(op, Label) and op.offset == 0:
            return Register(op.name)
        if isinstance(op, Vector):
            return Vector(tuple(fix(e) for e in op.elements))
        return op
    return Instruction(inst.opcode, inst.qualifiers, tuple(fix(o) for o in inst.operands),
                       inst.predicate, inst.loc, text.strip())
