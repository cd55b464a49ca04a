"""ptxsim.ptx: the PTX front end.

    parse_module(text, filename=None) -> Module
    parse_instruction(text) -> Instruction
    validate(module_or_instruction, target=None, ptx_version=None, registers=None) -> list[Diagnostic]

See docs/frontend.md.
"""
from ptxsim.ptx.instruction import (Address, Group, Immediate, Instruction, Label, Operand,
                                    Predicate, Register, RegisterPair, SourceLoc,
                                    SpecialRegister, Vector)
from ptxsim.ptx.module import Block, Directive, Function, LabelDef, Module, Param, RegDecl, Variable
from ptxsim.ptx.parser import parse_instruction, parse_module
from ptxsim.ptx.legality.common import Diagnostic
from ptxsim.ptx.validator import errors_of, validate

__all__ = ["parse_module", "parse_instruction", "validate", "errors_of", "Diagnostic", "Module", "Function", "Param", "RegDecl",
           "Variable", "Block", "LabelDef", "Directive", "Instruction", "Operand", "Register",
           "SpecialRegister", "Immediate", "Vector", "Address", "Label", "RegisterPair", "Group",
           "Predicate", "SourceLoc"]
