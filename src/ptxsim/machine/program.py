"""A kernel as the executor runs it: the flat instruction list of one `.entry`, labels resolved
per `{ }` scope (PTX ISA 11.1: a label is visible in the block that defines it and the blocks
nested in it), register declarations as a name -> type table, and the variables of the module
and the function with their state spaces.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ptxsim.errors import OperandError, PtxValidationError
from ptxsim.ptx.instruction import Instruction
from ptxsim.ptx.module import Block, Directive, LabelDef, RegDecl, RegisterTable, Variable

# bytes of one element of a PTX fundamental type (5.2.1)
TYPE_BYTES = {
    ".pred": 1, ".b8": 1, ".u8": 1, ".s8": 1, ".b16": 2, ".u16": 2, ".s16": 2, ".f16": 2,
    ".bf16": 2, ".b32": 4, ".u32": 4, ".s32": 4, ".f32": 4, ".f16x2": 4, ".bf16x2": 4,
    ".tf32": 4, ".b64": 8, ".u64": 8, ".s64": 8, ".f64": 8, ".b128": 16,
    ".e4m3": 1, ".e5m2": 1, ".e4m3x2": 2, ".e5m2x2": 2,
}


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

        def walk(block: Block, chain: tuple[int, ...]):
            bid = counter[0]
            counter[0] += 1
            chain = chain + (bid,)
            labels = block_labels.setdefault(bid, {})
            for s in block.statements:
                if isinstance(s, Instruction):
                    insts.append(s)
                    scopes.append(chain)
                elif isinstance(s, LabelDef):
                    labels[s.name] = len(insts)
                    last_label[0] = s.name
                elif isinstance(s, Block):
                    walk(s, chain)
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
                   list(module.variables) + fvars, labels, brx)

    def line(self, pc: int) -> int | None:
        if 0 <= pc < len(self.instructions):
            return self.instructions[pc].loc.line
        return None

    def text(self, pc: int) -> str:
        if 0 <= pc < len(self.instructions):
            return str(self.instructions[pc])
        return "<end of kernel>"
