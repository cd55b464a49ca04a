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


class RegisterTable:
    """name -> declared type, over a set of RegDecls (ranges resolved without expanding)."""

    def __init__(self, decls=(), extra: dict | None = None):
        self.exact: dict = dict(extra or {})
        self.ranges: dict = {}
        for d in decls:
            for p, c in d.items:
                if c is None:
                    self.exact[p] = d.type
                else:
                    self.ranges.setdefault(p, []).append((c, d.type))

    def get(self, name: str, default=None):
        if name in self.exact:
            return self.exact[name]
        k = len(name)
        while k > 0 and name[k - 1].isdigit():
            k -= 1
        prefix, idx = name[:k], name[k:]
        if idx and prefix in self.ranges and (idx == "0" or not idx.startswith("0")):
            for c, t in self.ranges[prefix]:
                if int(idx) < c:
                    return t
        return default

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None


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
