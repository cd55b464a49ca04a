"""A kernel as the executor runs it: the flat instruction list of one `.entry`, labels resolved
per `{ }` scope (PTX ISA 11.1: a label is visible in the block that defines it and the blocks
nested in it), register declarations as a name -> type table, and the variables of the module
and the function with their state spaces.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import dataclasses

import numpy as np

from ptxsim.errors import OperandError, PtxValidationError, UnsupportedFeature
from ptxsim.ptx.instruction import (Address, Group, Instruction, Predicate, Register,
                                    RegisterPair, Vector)
from ptxsim.ptx.module import Block, Directive, LabelDef, RegDecl, RegisterTable, Variable

# bytes of one element of a PTX fundamental type (5.2.1)
TYPE_BYTES = {
    ".pred": 1, ".b8": 1, ".u8": 1, ".s8": 1, ".b16": 2, ".u16": 2, ".s16": 2, ".f16": 2,
    ".bf16": 2, ".b32": 4, ".u32": 4, ".s32": 4, ".f32": 4, ".f16x2": 4, ".bf16x2": 4,
    ".tf32": 4, ".b64": 8, ".u64": 8, ".s64": 8, ".f64": 8, ".b128": 16,
    ".e4m3": 1, ".e5m2": 1, ".e4m3x2": 2, ".e5m2x2": 2,
}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def reg_dtype(t: str | None):
    """The numpy dtype of a register declared with type `t` (raw bits: uint8..uint64, bool for
    .pred), None for an undeclared register or a type without one (.b128 is (N, 2) uint64)."""
    if t is None:
        return None
    if t == ".pred":
        return np.bool_
    return UINT.get(TYPE_BYTES.get(t, 0))


@dataclass
class Program:
    """The executable form of one kernel (`Program.build(module, name)`)."""
    module: object
    function: object
    instructions: list[Instruction]
    branch_target: dict[int, int]                 # pc of a bra -> pc of its label
    registers: RegisterTable
    variables: list[Variable]                     # module variables + function-scope ones
    labels: dict[str, int] = field(default_factory=dict)   # outermost definition of each label
    brx_targets: dict[int, list[int]] = field(default_factory=dict)  # brx.idx pc -> table
    functions: dict[str, "Callee"] = field(default_factory=dict)     # .func bodies (renamed)
    call_params: dict[str, int] = field(default_factory=dict)       # per-thread .param bytes

    @classmethod
    def build(cls, module, kernel: str) -> "Program":
        try:
            fn = module.function(kernel)
        except KeyError:
            names = ", ".join(f.name for f in module.entries) or "none"
            raise OperandError(f"kernel '{kernel}' is not in the module (entries: {names})") \
                from None
        if fn.body is None:
            raise OperandError(f"'{kernel}' is only declared in this module (no body)")
        insts: list[Instruction] = []
        scopes: list[tuple[int, ...]] = []        # per instruction: chain of block ids
        block_labels: dict[int, dict[str, int]] = {}
        fvars: list[Variable] = []
        decls: list[RegDecl] = []
        counter = [0]
        tables: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {}   # .branchtargets
        last_label = [None]

        call_params: dict[str, int] = {}
        rename = [None]

        def walk(block: Block, chain: tuple[int, ...], scoped=()):
            bid = counter[0]
            counter[0] += 1
            if chain:
                # registers declared in a nested { } block are local to it (PTX ISA 5.1.1,
                # "scope"; ptxas accepts the same name with another type in a sibling block,
                # and Triton's inline-asm upcasts rely on it): renamed 'b<id>::name' inside it
                local = [rename[0](d) if rename[0] is not None else d
                         for d in block.statements if isinstance(d, RegDecl)]
                if local:
                    scoped = (_renamer(f"b{bid}", lambda n, L=local: any(d.declares(n)
                                                                        for d in L)),) + scoped
            chain = chain + (bid,)
            labels = block_labels.setdefault(bid, {})
            for s in block.statements:
                if rename[0] is not None and isinstance(s, (Instruction, RegDecl, Variable)):
                    s = rename[0](s)
                if scoped and isinstance(s, (Instruction, RegDecl)):
                    for r in scoped:                   # innermost first: it shadows the rest
                        s = r(s)
                if isinstance(s, Variable) and s.space == ".param":
                    call_params[s.name] = _param_bytes(s)
                    continue
                if isinstance(s, Instruction):
                    insts.append(s)
                    scopes.append(chain)
                elif isinstance(s, LabelDef):
                    labels[s.name] = len(insts)
                    last_label[0] = s.name
                elif isinstance(s, Block):
                    walk(s, chain, scoped)
                elif isinstance(s, RegDecl):
                    decls.append(s)
                elif isinstance(s, Variable):
                    fvars.append(s)
                elif isinstance(s, Directive):
                    if s.name == ".branchtargets" and last_label[0] is not None:
                        tables[last_label[0]] = (tuple(s.args), chain)
        def resolve(name, chain, inst):
            for bid in reversed(chain):
                if name in block_labels[bid]:
                    return block_labels[bid][name]
            raise PtxValidationError(f"line {inst.loc.line}: branch target '{name}' is "
                                     "not defined in an enclosing scope")
        walk(fn.body, ())
        # .func bodies reachable through call, appended after the kernel with their registers
        # and parameters renamed "func::name" (PTX registers and params are function-local)
        functions: dict[str, Callee] = {}
        calls: dict[str, set] = {}                 # function -> the functions it calls
        todo = [i for i in insts if i.opcode == "call"]
        while todo:
            call = todo.pop()
            name = _callee_name(call)
            if name in functions:
                continue
            try:
                f = module.function(name)
            except KeyError:
                f = None
            if f is not None and f.body is None and name in EXTERN_FUNCTIONS:
                # a system call the executor performs itself (entry -1): vprintf, __assertfail
                functions[name] = Callee(name, -1, [], [])
                continue
            if f is None or f.body is None:
                raise UnsupportedFeature(f"line {call.loc.line}: call of '{name}', which has no "
                                         "body in this module (of the extern functions only "
                                         f"{' and '.join(sorted(EXTERN_FUNCTIONS))} are "
                                         "modelled)")
            local = {p.name for p in list(f.params) + list(f.return_params or [])}
            ftable = RegisterTable(f.registers)
            rename[0] = _renamer(name, lambda n, L=local, T=ftable: n in L or T.get(n) is not None)
            start = len(insts)
            for p in list(f.params) + list(f.return_params or []):
                call_params[f"{name}::{p.name}"] = _param_bytes(p)
            walk(f.body, ())
            rename[0] = None
            functions[name] = Callee(name, start, [f"{name}::{p.name}" for p in f.params],
                                     [f"{name}::{p.name}" for p in (f.return_params or [])])
            calls[name] = {_callee_name(i) for i in insts[start:] if i.opcode == "call"}
            todo += [i for i in insts[start:] if i.opcode == "call"]
        # functions that can call themselves (a cycle of the call graph) save their registers
        # and parameters per call (handlers.control._call / _ret)
        for name, callee in functions.items():
            seen, stack = set(), list(calls.get(name, ()))
            while stack:
                g = stack.pop()
                if g in seen:
                    continue
                seen.add(g)
                stack += calls.get(g, ())
            callee.recursive = name in seen
        targets: dict[int, int] = {}
        brx: dict[int, list[int]] = {}
        for pc, inst in enumerate(insts):
            if inst.opcode == "bra":
                targets[pc] = resolve(inst.operands[0].name, scopes[pc], inst)
            elif inst.opcode == "brx":
                tname = inst.operands[1].name
                if tname not in tables:
                    raise PtxValidationError(f"line {inst.loc.line}: '{tname}' is not a "
                                             ".branchtargets list")
                names, chain = tables[tname]
                brx[pc] = [resolve(n, chain, inst) for n in names]
        labels: dict[str, int] = {}
        for bid in sorted(block_labels, reverse=True):
            labels.update(block_labels[bid])
        return cls(module, fn, insts, targets, RegisterTable(decls),
                   list(module.variables) + fvars, labels, brx, functions, call_params)

    def line(self, pc: int) -> int | None:
        if 0 <= pc < len(self.instructions):
            return self.instructions[pc].loc.line
        return None

    def text(self, pc: int) -> str:
        if 0 <= pc < len(self.instructions):
            return str(self.instructions[pc])
        return "<end of kernel>"


# extern functions with no PTX body that the executor implements (CUDA system calls)
EXTERN_FUNCTIONS = {"vprintf", "__assertfail"}


@dataclass
class Callee:
    name: str
    entry: int                       # pc of its first instruction
    params: list[str]                # renamed formal parameters
    returns: list[str]
    recursive: bool = False          # on a cycle of the call graph


def _param_bytes(v) -> int:
    n = TYPE_BYTES.get(v.type or ".b8", 1)
    for d in v.dims:
        n *= int(d or 0)
    return n


def _callee_name(call) -> str:
    for o in call.operands:
        if not isinstance(o, Group):
            return o.name
    raise PtxValidationError(f"line {call.loc.line}: call without a target")


def _renamer(func: str, is_local):
    """Rename a callee's registers / parameters to 'func::name' in instructions and decls."""
    def name(n):
        return f"{func}::{n}" if is_local(n) else n

    def op(o):
        if isinstance(o, Register):
            return dataclasses.replace(o, name=name(o.name))
        if isinstance(o, Address):
            return dataclasses.replace(o, base=name(o.base) if o.base else o.base,
                                       vector=op(o.vector) if o.vector else None)
        if isinstance(o, (Vector, Group)):
            return dataclasses.replace(o, elements=tuple(op(e) for e in o.elements))
        if isinstance(o, RegisterPair):
            return dataclasses.replace(o, first=op(o.first), second=op(o.second))
        if hasattr(o, "name") and is_local(o.name):          # a Label naming a parameter
            return dataclasses.replace(o, name=name(o.name))
        return o

    def rename(s):
        if isinstance(s, Instruction):
            pred = s.predicate
            if pred is not None:
                pred = Predicate(name(pred.name), pred.negated)
            return dataclasses.replace(s, operands=tuple(op(o) for o in s.operands),
                                       predicate=pred)
        if isinstance(s, RegDecl):
            return dataclasses.replace(s, items=tuple((f"{func}::{p}", c) for p, c in s.items))
        if isinstance(s, Variable):
            return dataclasses.replace(s, name=f"{func}::{s.name}")
        return s
    return rename
