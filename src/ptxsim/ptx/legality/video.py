"""Legality of the video instructions (PTX ISA 9.7.18: scalar 9.7.18.1, SIMD 9.7.18.2).

The table and its cross-field rules are isa/video.py's (`SYNTAX`, `problems`), the same the
executing isa module judges with; this module words them as diagnostics, checks operand kinds
and register widths where `problems` asks, and adds the PTX ISA / Target ISA notes (isa/video.py
MIN_PTX, TARGETS)."""
from __future__ import annotations

from ptxsim.isa import video as isa_video
from ptxsim.ptx.legality.common import Check


def video(c: Check) -> None:
    syn = isa_video.SYNTAX[c.i.opcode]
    for severity, msg in isa_video.problems(c.i.opcode, c.i.qualifiers, c.i.operands, c.operand):
        (c.err if severity == "error" else c.warn)(msg)
    c.since(isa_video.MIN_PTX[syn.kind], c.name, syn.section)
    c.target(isa_video.TARGETS[syn.kind], c.name, syn.section)


RULES = {op: video for op in isa_video.SYNTAX}
