"""PTX text -> Module / Instruction objects: a hand-written scanner, linear in the input.

`parse_module(text, filename=None)` parses a whole module (what nvcc, Triton and the CuTe DSL
emit); `parse_instruction(text)` parses one instruction, optionally predicated, `;` optional.
Syntax errors raise `PtxSyntaxError` with line and column.

Instructions, the bulk of every module, take a fast path: one regular expression finds the
guard and the mnemonic, the operand text up to `;` is split at its top-level commas, and each
operand's text is parsed once and then looked up (the same `%r12` or `[%rd3+16]` recurs all
over a kernel; operands are immutable). Declarations and directives go through a small
streaming tokenizer. The grammar the scanner implements is written out in `grammar.py` (PTX ISA
chapters 4, 5 and 11); `lark_parser.py` is a reference implementation of that grammar, used by
the tests to cross-check this scanner on real compiler output.
"""
from __future__ import annotations

import re

from ptxsim.errors import PtxSyntaxError
from ptxsim.ptx.gcpause import paused
from ptxsim.ptx.instruction import (Address, Group, Immediate, Instruction, Label, Predicate,
                                    Register, RegisterPair, SourceLoc, SpecialRegister, Vector,
                                    float_immediate, int_immediate, split_mnemonic)
from ptxsim.ptx.module import (Block, Directive, Function, LabelDef, Module, Param, RegDecl,
                               Variable)

__all__ = ["parse_module", "parse_instruction", "SPECIAL_REGISTERS"]

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

# Operand positions that name a branch target / callee, not a register.
_LABEL_OPCODES = frozenset({"bra", "brx", "call"})
_LINKAGE = frozenset({".visible", ".extern", ".weak", ".common"})
_SPACES = frozenset({".global", ".shared", ".const", ".local", ".param", ".tex"})
_PTR_SPACES = (".ptr", ".global", ".shared", ".const", ".local")

# ------------------------------------------------------------------------------ lexical level
_COMMENT = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*[\s\S]*?\*/')
_WS = re.compile(r"\s*")
_INSTR = re.compile(
    r"(?:@\s*(!?)\s*([A-Za-z_$%][\w$]*(?:\.[A-Za-z0-9_]+)?)\s+)?"
    r"([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_]+(?:::[A-Za-z0-9_]+)*|::[A-Za-z0-9_]+)*)")
_OPERANDS = re.compile(r"[^;{}]*(?:\{[^;{}]*\}[^;{}]*)*")
_LABEL = re.compile(r"([A-Za-z_$%][\w$]*)[ \t]*:(?!:)")
_TOKEN = re.compile(r"""\s*(?:
    (?P<dir>\.[A-Za-z_]\w*(?:::\w+)*)
  | (?P<hexf>0[fF][0-9a-fA-F]{8}(?![\w.])|0[dD][0-9a-fA-F]{16}(?![\w.]))
  | (?P<float>-?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+)
  | (?P<int>-?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uU]?)
  | (?P<name>[A-Za-z_$%][\w$]*)
  | (?P<str>"(?:\\.|[^"\\\n])*")
  | (?P<punct>[{}\[\](),;=<>+:|!@*-])
)""", re.X)
_NAME = re.compile(r"[A-Za-z_$%][\w$]*(?:\.[A-Za-z0-9_]+)?")
_HEXFLOAT = re.compile(r"0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}")
_FLOAT = re.compile(r"-?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+")
_INT = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uU]?")
_UINT = re.compile(r"(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uU]?")
_ADDR = re.compile(r"([A-Za-z_$%][\w$]*(?:\.[A-Za-z0-9_]+)?)\s*(?:\+\s*(-?(?:0[xX][0-9a-fA-F]+|"
                   r"0[bB][01]+|\d+)[uU]?)|(-\s*(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uU]?))?")
_SYMOFF = re.compile(r"([A-Za-z_$%][\w$]*(?:\.[A-Za-z0-9_]+)?)\s*(?:\+\s*(-?(?:0[xX][0-9a-fA-F]+|"
                     r"0[bB][01]+|\d+)[uU]?)|(-\s*(?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uU]?))")
_PAIR = re.compile(r"([A-Za-z_$%][\w$]*(?:\.[A-Za-z0-9_]+)?)\s*\|\s*"
                   r"([A-Za-z_$%][\w$]*(?:\.[A-Za-z0-9_]+)?)")
_LOC = re.compile(r"\.loc[ \t]+(\d+)[ \t]+(\d+)[ \t]+(\d+)"
                  r"(?:[ \t]*,[ \t]*[A-Za-z_]\w*(?:[ \t]+(?:[A-Za-z_$%][\w$]*|\d+))+)*")
_INT_AT = re.compile(r"\s*((?:0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uU]?)(?![\w.])")
_SECTION_BODY = re.compile(r"\{[^}]*\}")
# a flat `{ int, int, ... }` initializer of decimal integers without leading zeros (a leading 0
# means octal in PTX: those take the general path)
_FLAT_INIT = re.compile(r"\s*\{\s*(-?(?:0|[1-9]\d*)(?:\s*,\s*-?(?:0|[1-9]\d*))*)\s*\}(?![\w.])")


class _Bad(Exception):
    """An operand that does not parse: `offset` into its text, `what` the problem."""

    def __init__(self, offset: int, what: str):
        self.offset, self.what = offset, what


# ------------------------------------------------------------------------------- operands
def _name_operand(tok: str) -> Register | Label:
    base, dot, sel = tok.partition(".")
    sel = dot + sel if dot else None
    if base[0] == "%":
        cls = SpecialRegister if base in SPECIAL_REGISTERS else Register
        return cls(base, sel)
    if sel:                                   # a bare register with a selector: `a.b0`
        return Register(base, sel)
    return Label(base)


def _as_register(op, **kw):
    cls = Register if isinstance(op, Label) else type(op)
    return cls(op.name, getattr(op, "selector", None), **kw)


def _immediate(s: str):
    if _HEXFLOAT.fullmatch(s):
        return float_immediate(s)
    if _FLOAT.fullmatch(s):
        return float_immediate(s)
    if _INT.fullmatch(s):
        return int_immediate(s)
    return None


def _split_list(s: str, base: int = 0):
    """Split `s` at its top-level commas -> [(offset, stripped piece)]. An empty piece is an
    error at its position."""
    out = []
    if "{" not in s and "[" not in s and "(" not in s:
        start = 0
        for piece in s.split(","):
            lead = len(piece) - len(piece.lstrip())
            out.append((base + start + lead, piece.strip()))
            start += len(piece) + 1
    else:
        depth, start = 0, 0
        for k, ch in enumerate(s):
            if ch in "{[(":
                depth += 1
            elif ch in "}])":
                depth -= 1
                if depth < 0:
                    raise _Bad(base + k, f"unexpected {ch!r}")
            elif ch == "," and depth == 0:
                piece = s[start:k]
                out.append((base + start + len(piece) - len(piece.lstrip()), piece.strip()))
                start = k + 1
        piece = s[start:]
        out.append((base + start + len(piece) - len(piece.lstrip()), piece.strip()))
    for off, piece in out:
        if not piece:
            raise _Bad(off, "missing operand")
    return out


def _elements(inner: str, base: int) -> tuple:
    if not inner.strip():
        return ()
    res = []
    for off, piece in _split_list(inner, base):
        try:
            res.append(_operand(piece))
        except _Bad as exc:
            raise _Bad(off + exc.offset, exc.what) from None
    return tuple(res)


def _parse_operand(s: str):
    c = s[0]
    if c == "%" or c == "_" or c == "$" or c.isalpha():
        if _NAME.fullmatch(s):
            return _name_operand(s)
        m = _PAIR.fullmatch(s)
        if m:
            a, b = _name_operand(m.group(1)), _name_operand(m.group(2))
            return RegisterPair(a if isinstance(a, Register) else Register(a.name),
                                b if isinstance(b, Register) else Register(b.name))
        m = _SYMOFF.fullmatch(s)
        if m:
            off = m.group(2) or m.group(3).replace(" ", "").replace("\t", "")
            return Label(m.group(1), int_immediate(off).value)
        m = _NAME.match(s)
        raise _Bad(m.end() if m else 0, "malformed operand")
    if c == "[":
        if s[-1] != "]":
            raise _Bad(len(s), "missing ']'")
        inner = s[1:-1]
        addr, comma, rest = inner.partition(",")
        vec = None
        if comma:
            r = rest.strip()
            if not (r.startswith("{") and r.endswith("}")):
                raise _Bad(1 + len(addr) + 1 + len(rest) - len(rest.lstrip()),
                           "expected a {vector} after ',' in an address")
            vec = Vector(_elements(r[1:-1], 0))
        a = addr.strip()
        m = _ADDR.fullmatch(a)
        if m:
            off = m.group(2) or (m.group(3) or "0").replace(" ", "").replace("\t", "")
            return Address(m.group(1), int_immediate(off).value, vec)
        if _UINT.fullmatch(a):
            return Address(None, int_immediate(a).value, vec)
        raise _Bad(1 + len(addr) - len(addr.lstrip()), "malformed address")
    if c == "{":
        if s[-1] != "}":
            raise _Bad(len(s), "missing '}'")
        return Vector(_elements(s[1:-1], 1))
    if c == "(":
        if s[-1] != ")":
            raise _Bad(len(s), "missing ')'")
        return Group(_elements(s[1:-1], 1))
    if c == "!":
        rest = s[1:].lstrip()
        if _NAME.fullmatch(rest):
            return _as_register(_name_operand(rest), negated=True)
        raise _Bad(1, "expected a register after '!'")
    if c == "-":
        imm = _immediate(s)
        if imm is not None:
            return imm
        rest = s[1:].lstrip()
        if rest and _NAME.fullmatch(rest):
            return _as_register(_name_operand(rest), minus=True)
        raise _Bad(1, "malformed operand after '-'")
    imm = _immediate(s)
    if imm is not None:
        return imm
    raise _Bad(0, f"unexpected character {c!r}")


_OPCACHE: dict = {}
_PRED_CACHE: dict = {}
# ids of the parsed operands that are or contain a bare name (Label); each is in _OPCACHE, so
# alive, and both are cleared together (identity: hashing the frozen dataclasses costs more)
_WITH_LABEL: set = set()
# an operand list's top-level pieces, when its brackets do not nest beyond [.., {..}]
_TOP_LEVEL = re.compile(r"(?:\[[^\[\]]*\]|\{[^{}]*\}|\([^()]*\)|[^,\[\]{}()])+")
_NESTED = re.compile(r"\[[^\[\]]*\]|\{[^{}]*\}|\([^()]*\)")


def _top_commas(raw: str) -> int:
    return _NESTED.sub("", raw).count(",")


def _operand(s: str):
    op = _OPCACHE.get(s)
    if op is None:
        op = _parse_operand(s)
        if len(_OPCACHE) > 500_000:
            _OPCACHE.clear()
            _WITH_LABEL.clear()
        _OPCACHE[s] = op
        if isinstance(op, Label) or (isinstance(op, (Vector, Group)) and
                                     any(id(e) in _WITH_LABEL for e in op.elements)):
            _WITH_LABEL.add(id(op))
    return op


_SPLIT_CACHE: dict = {}


def _split(mnemonic: str):
    r = _SPLIT_CACHE.get(mnemonic)
    if r is None:
        r = _SPLIT_CACHE[mnemonic] = split_mnemonic(mnemonic)
    return r


def _type_of(attrs) -> str | None:
    """The element type among declaration attributes (not .ptr, a state space, or .vN)."""
    for a in attrs:
        if a not in _PTR_SPACES and not (a[:2] == ".v" and a[2:].isdigit()) \
                and not a.startswith(".attribute("):
            return a
    return None


# --------------------------------------------------------------------------------- scanner
class _Parser:
    def __init__(self, text: str, filename: str | None):
        if not isinstance(text, str):
            raise PtxSyntaxError(f"PTX text must be a str, not {type(text).__name__}", None,
                                 None, filename)
        self.raw = text
        if "/" in text:
            text = _COMMENT.sub(_blank, text)
        self.text = text
        self.n = len(text)
        self.file = filename
        self.pos = 0
        self._line, self._lpos = 1, 0            # line number at offset _lpos (incremental)
        self.named: list = []                    # (statements, index) of instructions with names

    # -- positions -------------------------------------------------------------------------
    def loc(self, pos: int) -> SourceLoc:
        if pos >= self._lpos:
            self._line += self.text.count("\n", self._lpos, pos)
        else:
            self._line -= self.text.count("\n", pos, self._lpos)
        self._lpos = pos
        return SourceLoc(self._line, pos - self.text.rfind("\n", 0, pos), self.file)

    def error(self, msg: str, pos: int) -> PtxSyntaxError:
        pos = min(max(pos, 0), self.n)
        if pos >= self.n:                     # at EOF: the position of the last token
            back = len(self.text.rstrip())
            pos = max(back - 1, 0)
            msg = msg if "end of input" in msg else "unexpected end of input"
        loc = self.loc(pos) if self.n else SourceLoc(1, 1, self.file)
        return PtxSyntaxError(msg, loc.line, loc.col, self.file)

    def unexpected(self, pos: int) -> PtxSyntaxError:
        if pos >= self.n:
            return self.error("unexpected end of input", pos)
        m = _TOKEN.match(self.text, pos)
        tok = (m.group(m.lastgroup) if m and m.lastgroup else self.text[pos])
        start = m.start(m.lastgroup) if m and m.lastgroup else pos
        if not (m and m.lastgroup):
            return self.error(f"unexpected character {self.text[pos]!r}", pos)
        return self.error(f"unexpected {tok!r}", start)

    def skip(self) -> int:
        self.pos = _WS.match(self.text, self.pos).end()
        return self.pos

    # -- streaming tokens (declarations, directives) -------------------------------------------
    def peek(self):
        m = _TOKEN.match(self.text, self.pos)
        if m is None or m.lastgroup is None:
            p = _WS.match(self.text, self.pos).end()
            return (None if p >= self.n else "bad"), self.text[p:p + 1], p, p
        return m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup), m.end()

    def next(self):
        kind, val, start, end = self.peek()
        if kind is None:
            raise self.error("unexpected end of input", self.n)
        if kind == "bad":
            raise self.error(f"unexpected character {val!r}", start)
        self.pos = end
        return kind, val, start

    def expect(self, what: str, kinds=(), values=()):
        kind, val, start = self.next()
        if kind in kinds or val in values:
            return val, start
        raise self.error(f"unexpected {val!r} (expected {what})", start)

    def accept(self, value: str) -> bool:
        kind, val, start, end = self.peek()
        if kind is not None and val == value:
            self.pos = end
            return True
        return False

    def integer(self, what: str = "an integer") -> int:
        m = _INT_AT.match(self.text, self.pos)
        if m is None:
            kind, val, start, end = self.peek()
            if kind is None:
                raise self.error("unexpected end of input", self.n)
            raise self.error(f"unexpected {val!r} (expected {what})", start)
        self.pos = m.end()
        return int_immediate(m.group(1)).value

    # -- module --------------------------------------------------------------------------------
    def module(self) -> Module:
        m = Module(filename=self.file)
        text, n = self.text, self.n
        while True:
            pos = self.skip()
            if pos >= n:
                break
            if text[pos] != ".":
                raise self.unexpected(pos)
            kind, word, start = self.next()
            if word == ".version":
                val, _ = self.expect("a PTX ISA version", kinds=("float", "int"))
                m.version = val
            elif word == ".target":
                names = [self.expect("a target name", kinds=("name",))[0]]
                while self.accept(","):
                    names.append(self.expect("a target name", kinds=("name",))[0])
                m.targets = tuple(names)
            elif word == ".address_size":
                m.address_size = self.integer("an address size")
            elif word == ".file":
                idx, path = self.file_directive()
                m.files[idx] = path
            elif word == ".section":
                name, _ = self.expect("a section name", kinds=("dir",))
                self.skip()
                sm = _SECTION_BODY.match(self.text, self.pos)
                if sm is None:
                    raise self.unexpected(self.pos)
                m.sections.append((name, self.raw[sm.start():sm.end()]))
                self.pos = sm.end()
            elif word == ".pragma":
                self.pragma()
            elif word == ".loc":
                self.loc_directive(start)
            elif word in _LINKAGE or word in (".entry", ".func") or word in _SPACES:
                item = self.declaration(word, start)
                if isinstance(item, Function):
                    m.functions.append(item)
                else:
                    m.variables.extend(item)
            else:
                raise self.error(f"unexpected {word!r} (expected a directive)", start)
        return m

    def file_directive(self):
        idx = self.integer("a file index")
        path, _ = self.expect("a file name string", kinds=("str",))
        while self.accept(","):
            self.integer()
        return idx, path[1:-1]

    def pragma(self) -> Directive:
        strs = [self.expect("a string", kinds=("str",))[0][1:-1]]
        while self.accept(","):
            strs.append(self.expect("a string", kinds=("str",))[0][1:-1])
        self.expect("';'", values=(";",))
        return Directive(".pragma", tuple(strs))

    def loc_directive(self, start: int) -> Directive:
        m = _LOC.match(self.text, start)
        if m is None:
            raise self.error("malformed .loc directive (expected .loc FILE LINE COLUMN)", start)
        self.pos = m.end()
        return Directive(".loc", (int(m.group(1)), int(m.group(2)), int(m.group(3))))

    # -- declarations ------------------------------------------------------------------------------
    def declaration(self, word: str, start: int):
        linkage = []
        while word in _LINKAGE:
            linkage.append(word)
            kind, word, start = self.next()
        if word in (".entry", ".func"):
            return self.function(tuple(linkage), word, start)
        if word in _SPACES:
            return self.variables(tuple(linkage), word, start)
        raise self.error(f"unexpected {word!r} (expected .entry, .func or a state space)", start)

    def attrs(self):
        """attr*: `.align N` or any other directive word. -> (align, (words...))"""
        align, words = None, []
        while True:
            kind, val, start, end = self.peek()
            if kind != "dir" or val in (".entry", ".func"):
                return align, tuple(words)
            self.pos = end
            if val == ".align":
                align = self.integer("an alignment")
            elif val == ".attribute":
                # 5.4.8: .attribute(.managed) / (.unified(...)) on a .global variable, kept as
                # one attribute word (nvcc 13.0 writes __managed__ variables so)
                self.expect("'('", values=("(",))
                names = [self.expect("an attribute", kinds=("dir",))[0]]
                while self.accept(","):
                    names.append(self.expect("an attribute", kinds=("dir",))[0])
                self.expect("')'", values=(")",))
                words.append(".attribute(" + ",".join(names) + ")")
            else:
                words.append(val)

    def dims(self) -> tuple:
        dims = []
        while self.accept("["):
            if self.accept("]"):
                dims.append(None)
                continue
            dims.append(self.integer("an array size"))
            self.expect("']'", values=("]",))
        return tuple(dims)

    def variables(self, linkage: tuple, space: str, start: int) -> list:
        loc = self.loc(start)
        align, words = self.attrs()
        typ = _type_of(words)
        decls = []
        while True:
            name, _ = self.expect("a variable name", kinds=("name",))
            decls.append((name, self.dims()))
            if not self.accept(","):
                break
        init = None
        if self.accept("="):
            init = self.initializer()
        self.expect("';'", values=(";",))
        return [Variable(space, name, typ, align, dims, linkage, words, init, loc)
                for name, dims in decls]

    def initializer(self):
        m = _FLAT_INIT.match(self.text, self.pos)
        if m is not None:
            # `{202, 29, 180, ...}`: a flat list of decimal integers (nvcc's tables, 10^5
            # elements) read in one step; anything else (octal, hex, floats, names, nesting)
            # goes through the tokenizer below
            self.pos = m.end()
            return [int(v) for v in m.group(1).split(",")]
        kind, val, start = self.next()
        if val == "{":
            vals = [self.initializer()]
            while self.accept(","):
                vals.append(self.initializer())
            self.expect("'}'", values=("}",))
            return vals
        if kind in ("int",):
            return int_immediate(val).value
        if kind in ("float", "hexf"):
            return float_immediate(val).value
        if kind == "name":
            if self.accept("+"):
                return (val, self.integer("an offset"))
            if self.accept("("):
                inner, _ = self.expect("a symbol name", kinds=("name",))
                self.expect("')'", values=(")",))
                return (val, inner)
            return val
        raise self.error(f"unexpected {val!r} (expected an initializer)", start)

    def param(self) -> Param:
        space, start = self.expect(".param or .reg", values=(".param", ".reg"))
        align, words = self.attrs()
        name, _ = self.expect("a parameter name", kinds=("name",))
        return Param(space, name, _type_of(words), align, self.dims(), words)

    def param_list(self) -> list:
        self.expect("'('", values=("(",))
        out = []
        if self.accept(")"):
            return out
        while True:
            out.append(self.param())
            if self.accept(")"):
                return out
            self.expect("',' or ')'", values=(",",))

    def function(self, linkage: tuple, kind: str, start: int) -> Function:
        loc = self.loc(start)
        ret = None
        if self.peek()[1] == "(":
            ret = self.param_list()
        name, _ = self.expect("a function name", kinds=("name",))
        params = self.param_list() if self.peek()[1] == "(" else []
        directives: dict = {}
        while True:
            k, val, s, e = self.peek()
            if k == "dir":
                self.pos = e
                if val == ".pragma":
                    directives[".pragma"] = directives.get(".pragma", ()) + self.pragma().args
                    continue
                ints = []
                if self.peek()[0] == "int":
                    ints.append(self.integer())
                    while self.accept(","):
                        ints.append(self.integer())
                directives[val] = tuple(ints)
                continue
            if val == ";":
                self.pos = e
                body = None
                break
            if val == "{":
                self.pos = e
                body = self.block(s)
                break
            raise self.unexpected(s if k is not None else self.n)
        f = Function(kind, name, params, ret, linkage, directives, body, loc)
        if body is not None:
            _resolve_registers(f, self.named)
        self.named = []
        return f

    # -- function bodies -------------------------------------------------------------------------
    def block(self, open_pos: int) -> Block:
        """The statements of a `{ }` scope; self.pos is just after its `{`."""
        stmts: list = []
        append = stmts.append
        text, n, fname = self.text, self.n, self.file
        ws, instr_re, ops_re, label_re = _WS.match, _INSTR.match, _OPERANDS.match, _LABEL.match
        count, rfind = text.count, text.rfind
        loc = self.loc(open_pos)
        preds = _PRED_CACHE
        labelled = _WITH_LABEL
        new, Inst, Loc = object.__new__, Instruction, SourceLoc
        while True:
            pos = ws(text, self.pos).end()
            if pos >= n:
                raise self.error("unexpected end of input ('{' not closed)", n)
            c = text[pos]
            if c == "}":
                self.pos = pos + 1
                return Block(stmts, loc)
            if c == "{":
                self.pos = pos + 1
                append(self.block(pos))
                continue
            if c == ".":
                self.pos = pos
                self.body_directive(stmts)
                continue
            if c != "@":
                lm = label_re(text, pos)
                if lm is not None:
                    append(LabelDef(lm.group(1), self.loc(pos)))
                    self.pos = lm.end()
                    continue
            im = instr_re(text, pos)
            if im is None:
                self.pos = pos
                raise self.unexpected(pos)
            oend = im.end()
            om = ops_re(text, oend)
            end = om.end()
            if end >= n or text[end] != ";":
                raise self.unexpected(end)
            opcode, quals = _split(im.group(3))
            raw = om.group()
            operands = self.operands(raw, oend) if raw and not raw.isspace() else ()
            pred = None
            g2 = im.group(2)
            if g2 is not None:
                key = (g2, im.group(1))
                pred = preds.get(key)
                if pred is None:
                    pred = preds[key] = Predicate(g2, im.group(1) == "!")
            # the line of the opcode, counted from the last position looked at (linear)
            op_pos = im.start(3)
            self._line += count("\n", self._lpos, op_pos)
            self._lpos = op_pos
            sl = new(Loc)
            sl.__dict__.update(line=self._line, col=op_pos - rfind("\n", 0, op_pos), file=fname)
            inst = new(Inst)            # frozen dataclass, filled without __init__'s setattrs
            inst.__dict__.update(opcode=opcode, qualifiers=quals, operands=operands,
                                 predicate=pred, loc=sl, text="")
            if operands and not labelled.isdisjoint(map(id, operands)):
                self.named.append((stmts, len(stmts)))
            append(inst)
            self.pos = end + 1

    def operands(self, raw: str, base: int) -> tuple:
        try:
            if "{" not in raw and "[" not in raw and "(" not in raw:
                out = []
                for piece in raw.split(","):
                    s = piece.strip()
                    if not s:
                        raise _Bad(0, "missing operand")
                    out.append(_operand(s))
                return tuple(out)
            pieces = _TOP_LEVEL.findall(raw)
            if len(pieces) == raw.count(",") - sum(p.count(",") for p in pieces) + 1:
                out = []
                for piece in pieces:
                    s = piece.strip()
                    if not s:
                        raise _Bad(0, "missing operand")
                    out.append(_operand(s))
                return tuple(out)
            return tuple(_operand(p) for _, p in _split_list(raw))
        except _Bad:
            pass
        # slow path, for the position of the problem
        try:
            for off, piece in _split_list(raw):
                try:
                    _operand(piece)
                except _Bad as exc:
                    raise _Bad(off + exc.offset, exc.what) from None
        except _Bad as exc:
            bad = exc
        else:
            raise self.error("malformed operands", base)
        pos = _WS.match(self.text, base + bad.offset).end()
        err = self.unexpected(pos)
        if bad.what != "missing operand" and not bad.what.startswith("unexpected"):
            err = PtxSyntaxError(f"{err.message} ({bad.what})", err.line, err.col, err.file)
        raise err

    def body_directive(self, stmts: list) -> None:
        kind, word, start = self.next()
        if word == ".reg":
            stmts.append(self.reg_decl(start))
        elif word in _SPACES or word in _LINKAGE:
            linkage = []
            while word in _LINKAGE:
                linkage.append(word)
                kind, word, start = self.next()
            if word not in _SPACES:
                raise self.error(f"unexpected {word!r} (expected a state space)", start)
            stmts.extend(self.variables(tuple(linkage), word, start))
        elif word == ".loc":
            stmts.append(self.loc_directive(start))
        elif word == ".pragma":
            d = self.pragma()
            stmts.append(Directive(".pragma", d.args, self.loc(start)))
        elif word == ".file":
            idx, path = self.file_directive()
            stmts.append(Directive(".file", (idx, path), self.loc(start)))
        elif word in (".branchtargets", ".calltargets"):
            names = [self.expect("a label", kinds=("name",))[0]]
            while self.accept(","):
                names.append(self.expect("a label", kinds=("name",))[0])
            self.expect("';'", values=(";",))
            stmts.append(Directive(word, tuple(names), self.loc(start)))
        elif word == ".callprototype":
            items = []
            if self.peek()[1] == "(":
                items.append(("ret", self.param_list()))
            items.append(self.expect("a name", kinds=("name",))[0])
            items.append(("params", self.param_list()))
            self.expect("';'", values=(";",))
            stmts.append(Directive(".callprototype", tuple(items), self.loc(start)))
        else:
            raise self.error(f"unexpected {word!r} (expected an instruction or a declaration)",
                             start)

    def reg_decl(self, start: int) -> RegDecl:
        loc = self.loc(start)
        align, words = self.attrs()
        if not words:
            raise self.unexpected(self.skip())
        items = []
        while True:
            name, _ = self.expect("a register name", kinds=("name",))
            count = None
            if self.accept("<"):
                count = self.integer("a register count")
                self.expect("'>'", values=(">",))
            items.append((name, count))
            if not self.accept(","):
                break
        self.expect("';'", values=(";",))
        vec = next((int(a[2:]) for a in words if a[:2] == ".v" and a[2:].isdigit()), None)
        return RegDecl(_type_of(words), tuple(items), vec, loc)


def _blank(m) -> str:
    s = m.group()
    if s[0] == '"':
        return s
    return re.sub(r"[^\n]", " ", s)


def _resolve_registers(f: Function, named=None) -> None:
    """Bare identifiers declared with .reg in a function are registers, not labels/symbols
    (`%`-names are registers already)."""
    exact, prefixes = set(), set()
    for d in f.registers:
        for p, c in d.items:
            if p[0] != "%":
                (exact if c is None else prefixes).add(p)
    for p in f.params:
        if p.space == ".reg" and p.name[0] != "%":
            exact.add(p.name)
    if not exact and not prefixes:
        return

    def declared(name: str) -> bool:
        if name in exact:
            return True
        k = len(name)
        while k > 0 and name[k - 1].isdigit():
            k -= 1
        return k < len(name) and name[:k] in prefixes

    def fix(op):
        if isinstance(op, Label):
            return Register(op.name) if op.offset == 0 and declared(op.name) else op
        if isinstance(op, (Vector, Group)):
            els = tuple(fix(e) for e in op.elements)
            if any(a is not b for a, b in zip(els, op.elements)):
                return type(op)(els)
        return op

    def one(stmts, k):
        s = stmts[k]
        ops = s.operands
        new = tuple(fix(o) for o in ops)
        if any(a is not b for a, b in zip(new, ops)):
            stmts[k] = Instruction(s.opcode, s.qualifiers, new, s.predicate, s.loc, s.text)

    def walk(block: Block):
        for k, s in enumerate(block.statements):
            if isinstance(s, Instruction):
                if any(isinstance(o, (Label, Vector, Group)) for o in s.operands):
                    one(block.statements, k)
            elif isinstance(s, Block):
                walk(s)
    if named is None:
        walk(f.body)
    else:                                 # the parser noted the instructions with names
        for stmts, k in named:
            one(stmts, k)


# ---------------------------------------------------------------------------------- entry points
def parse_module(text: str, filename: str | None = None) -> Module:
    """Parse a whole PTX module. Raises PtxSyntaxError(line, col) on malformed text."""
    try:
        with paused():
            return _Parser(text, filename).module()
    except RecursionError:
        raise PtxSyntaxError("nesting too deep", None, None, filename) from None


def parse_instruction(text: str) -> Instruction:
    """Parse one instruction (`[@[!]p] opcode.qualifiers operands[;]`).

    Bare identifiers (`taddr`, `adesc`, as in the spec's examples) are registers, except the
    target of bra / brx / call which stays a Label.
    """
    if not isinstance(text, str):
        raise PtxSyntaxError(f"an instruction must be given as a str, not {type(text).__name__}")
    src = text.strip()
    if not src.endswith(";"):
        src += ";"
    p = _Parser(src + "\n}", None)
    block = p.block(0)
    if len(block.statements) != 1 or not isinstance(block.statements[0], Instruction) \
            or p.skip() < p.n:
        insts = [s for s in block.statements if isinstance(s, Instruction)]
        if not insts:
            raise PtxSyntaxError("expected one instruction", 1, 1)
        raise PtxSyntaxError("expected one instruction, got more", 1, 1)
    inst = block.statements[0]
    if inst.opcode in _LABEL_OPCODES:
        return Instruction(inst.opcode, inst.qualifiers, inst.operands, inst.predicate,
                           SourceLoc(inst.loc.line, inst.loc.col), text.strip())

    def fix(op):
        if isinstance(op, Label) and op.offset == 0:
            return Register(op.name)
        if isinstance(op, Vector):
            return Vector(tuple(fix(e) for e in op.elements))
        return op
    return Instruction(inst.opcode, inst.qualifiers, tuple(fix(o) for o in inst.operands),
                       inst.predicate, SourceLoc(inst.loc.line, inst.loc.col), text.strip())


# Immediate is re-exported for callers that build operands by hand.
_ = Immediate
