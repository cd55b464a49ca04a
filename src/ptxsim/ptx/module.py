"""A parsed PTX module: directives, variables, functions, statements in { } scopes
(PTX ISA 11 "Directives", 5.4 "Variables")."""
from __future__ import annotations

from dataclasses import dataclass, field

from ptxsim.ptx.instruction import Instruction, SourceLoc


@dataclass
class RegDecl:
    """`.reg .b32 %r<10>, %x;` -> items (('%r', 10), ('%x', None)); names '%r0'..'%r9', '%x'.
    `.reg .v4 .f32 v;` -> vector=4. Ranges stay (prefix, count) so `%r<100000000>` costs nothing."""
    type: str
    items: tuple[tuple[str, int | None], ...]
    vector: int | None = None
    loc: SourceLoc = field(default_factory=SourceLoc)

    @property
    def names(self) -> tuple[str, ...]:
        """Every declared name (expands ranges: mind huge ones)."""
        return tuple(n for p, c in self.items for n in ((p,) if c is None else (f"{p}{i}" for i in range(c))))

    def declares(self, name: str) -> bool:
        for p, c in self.items:
            if c is None:
                if name == p:
                    return True
            elif name.startswith(p) and name[len(p):].isdigit():
                idx = name[len(p):]
                if (idx == "0" or not idx.startswith("0")) and int(idx) < c:
                    return True
        return False


_DIGITS = "0123456789"


class RegisterTable:
    """name -> declared type, over a set of RegDecls (ranges resolved without expanding)."""

    def __init__(self, decls=(), extra: dict | None = None):
        self.exact: dict = dict(extra or {})
        self.ranges: dict = {}
        self.vectors: dict = {}            # name or range prefix -> N of a `.reg .vN` declaration
        for d in decls:
            self.add(d)

    def get(self, name: str, default=None):
        if name in self.exact:
            return self.exact[name]
        prefix = name.rstrip(_DIGITS)
        idx = name[len(prefix):]
        if idx and prefix in self.ranges and (idx == "0" or not idx.startswith("0")):
            for c, t in self.ranges[prefix]:
                if int(idx) < c:
                    return t
        return default

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def conflict(self, name: str, count: int | None):
        """The existing declaration a new item `name` (`count`: a `<N>` range) would duplicate
        in the same scope, as a string, or None. ptxas 13.5: `%r<4>` twice, or `%r<10>` and
        `%r5`, are "Duplicate definition"."""
        if count is None:
            return name if self.get(name) is not None else None
        if name in self.ranges:
            return f"{name}<{self.ranges[name][0][0]}>"
        for ex in self.exact:
            k = len(ex)
            while k > 0 and ex[k - 1].isdigit():
                k -= 1
            idx = ex[k:]
            if ex[:k] == name and idx and (idx == "0" or not idx.startswith("0")) and int(idx) < count:
                return ex
        return None

    def add(self, decl) -> None:
        for p, c in decl.items:
            if c is None:
                self.exact[p] = decl.type
            else:
                self.ranges.setdefault(p, []).append((c, decl.type))
            if decl.vector:
                self.vectors[p] = decl.vector

    def vector(self, name: str) -> int | None:
        """N when `name` was declared `.reg .vN`, else None."""
        if not self.vectors:
            return None
        if name in self.vectors:
            return self.vectors[name]
        prefix = name.rstrip(_DIGITS)
        return self.vectors.get(prefix) if len(prefix) < len(name) else None


class ScopedRegisters:
    """Registers visible in one `{ }` block: its own declarations, then the enclosing blocks'
    (PTX ISA 11.1: a `.reg` in a nested block is local to it and may shadow an outer name;
    ptxas 13.0/13.5 accept the same name with another type in a sibling block)."""

    def __init__(self, own: RegisterTable, parent: "ScopedRegisters | None" = None):
        self.own, self.parent = own, parent
        self._memo: dict = {}                 # name -> type (the tables do not change)

    def get(self, name: str, default=None):
        t = self._memo.get(name, 0)
        if t == 0:
            s, t = self, None
            while s is not None:
                t = s.own.get(name)
                if t is not None:
                    break
                s = s.parent
            self._memo[name] = t
        return default if t is None else t

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def vector(self, name: str) -> int | None:
        s = self
        while s is not None:
            if s.own.get(name) is not None:
                return s.own.vector(name)
            s = s.parent
        return None


@dataclass
class Variable:
    """A `.global/.shared/.const/.local/.param` variable (module or function scope)."""
    space: str                         # ".shared"
    name: str
    type: str | None = None            # ".b8"
    align: int | None = None
    dims: tuple = ()                   # (None,) for `x[]`, (16,) for `x[16]`
    linkage: tuple[str, ...] = ()
    attrs: tuple[str, ...] = ()        # every other directive (.ptr, .v4, state space of a .ptr)
    init: object = None
    loc: SourceLoc = field(default_factory=SourceLoc)


@dataclass
class Param:
    space: str                         # ".param" or ".reg"
    name: str
    type: str | None = None
    align: int | None = None
    dims: tuple = ()
    attrs: tuple[str, ...] = ()


@dataclass
class LabelDef:
    name: str
    loc: SourceLoc = field(default_factory=SourceLoc)


@dataclass
class Directive:
    """Any other directive statement kept as text (.loc, .pragma, .file in a body)."""
    name: str
    args: tuple = ()
    loc: SourceLoc = field(default_factory=SourceLoc)


@dataclass
class Block:
    """A `{ ... }` scope. Labels are local to the innermost block that defines them."""
    statements: list
    loc: SourceLoc = field(default_factory=SourceLoc)

    @property
    def reg_decls(self) -> list:
        """The `.reg` declarations of this block itself (not of nested blocks)."""
        return [s for s in self.statements if isinstance(s, RegDecl)]

    @property
    def labels(self) -> dict[str, LabelDef]:
        return {s.name: s for s in self.statements if isinstance(s, LabelDef)}

    def walk(self):
        """Every statement, depth-first, nested blocks flattened (the blocks themselves too)."""
        for s in self.statements:
            yield s
            if isinstance(s, Block):
                yield from s.walk()


@dataclass
class Function:
    kind: str                          # ".entry" or ".func"
    name: str
    params: list[Param]
    return_params: list[Param] | None
    linkage: tuple[str, ...]
    directives: dict                   # ".maxntid" -> (128, 1, 1), ".explicitcluster" -> (), ...
    body: Block | None                 # None for a prototype / .extern declaration
    loc: SourceLoc = field(default_factory=SourceLoc)

    @property
    def is_entry(self) -> bool:
        return self.kind == ".entry"

    @property
    def instructions(self) -> list[Instruction]:
        return [s for s in self.body.walk() if isinstance(s, Instruction)] if self.body else []

    @property
    def registers(self) -> list[RegDecl]:
        return [s for s in self.body.walk() if isinstance(s, RegDecl)] if self.body else []


@dataclass
class Module:
    version: str | None = None
    targets: tuple[str, ...] = ()
    address_size: int | None = None
    files: dict = field(default_factory=dict)          # .file index -> path
    variables: list[Variable] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    sections: list[tuple[str, str]] = field(default_factory=list)
    filename: str | None = None

    @property
    def target(self) -> str | None:
        """The SM target (first .target argument that is not an option like `debug`)."""
        for t in self.targets:
            if t.startswith(("sm_", "compute_")):
                return t
        return self.targets[0] if self.targets else None

    @property
    def entries(self) -> list[Function]:
        return [f for f in self.functions if f.is_entry]

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name and f.body is not None:
                return f
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def instructions(self) -> list[Instruction]:
        return [i for f in self.functions for i in f.instructions]
