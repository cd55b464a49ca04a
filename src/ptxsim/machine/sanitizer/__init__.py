"""The sanitizer: finds the bugs a GPU hides (races, reads of data an asynchronous operation has
not yet delivered, Tensor Memory protocol violations, uninitialised reads, divergent .aligned
instructions) while a kernel runs, each as a `Finding` with the PTX line, the CTA / warp / lane,
the address or Tensor Memory cell and the earlier conflicting access. docs/sanitizer.md.

Modes (`launch(..., sanitize=...)`, `ptxsim run --sanitize`):
  none      no checks (the run's cost without the sanitizer)
  default   racecheck (shared memory), the asynchronous-proxy and Tensor Memory protocol, the
            proxy fences, initcheck (shared memory, Tensor Memory), synccheck; the rules
            NVIDIA's compilers (Triton 3.9, CuTe DSL 4.8.1) rely on
  full      also the PTX ISA's canonical tcgen05 fence patterns (9.7.16.6.4), which those
            compilers do not follow, mbarrier phase skips, and global-memory races

A finding never changes the bits a correct kernel computes: the checks read the machine's
state and keep their own (happens-before clocks, shadow memory); asynchronous operations of a
sanitized run complete one per CTA at a time when no thread can run (the latest point the
memory model allows), which a correct kernel cannot observe.
"""
from __future__ import annotations

import os

from ptxsim.errors import OperandError
from ptxsim.machine.sanitizer.core import WaveSanitizer
from ptxsim.machine.sanitizer.findings import KINDS, Access, Finding, Findings
from ptxsim.machine.sanitizer.trace import Tracer, validate_trace

MODES = ("none", "default", "full")

__all__ = ["MODES", "KINDS", "Access", "Finding", "Findings", "Sanitizer", "Tracer",
           "validate_trace", "make"]


class Sanitizer:
    """The sanitizer of one launch: its mode, the findings, the tracer."""

    def __init__(self, mode: str = "default", trace=None, trace_ctas=(0, 1)):
        if mode not in MODES:
            raise OperandError(f"sanitize={mode!r}: choose one of {', '.join(MODES)}")
        self.mode = mode
        self.full = mode == "full"
        self.checks = mode != "none"
        self.findings = Findings()
        self.gshadow: dict = {}       # full mode: global buffer -> last write / read records
        self.global_sync = False      # an atomic / strong access to global memory ran
        self.tracer = Tracer(os.fspath(trace) if isinstance(trace, (str, os.PathLike)) else None,
                             trace_ctas) if trace else None

    def wave(self, wave) -> WaveSanitizer:
        return WaveSanitizer(self, wave)

    def finish(self) -> None:
        if self.tracer is not None:
            self.tracer.write()


def make(sanitize, trace=None, trace_ctas=(0, 1)) -> Sanitizer | None:
    """The Sanitizer a launch asks for: None when nothing is checked or traced."""
    if sanitize is None:
        sanitize = "default"
    if sanitize is False:
        sanitize = "none"
    if sanitize is True:
        sanitize = "default"
    if not isinstance(sanitize, str) or sanitize not in MODES:
        raise OperandError(f"sanitize={sanitize!r}: choose one of {', '.join(MODES)}")
    if sanitize == "none" and not trace:
        return None
    return Sanitizer(sanitize, trace, trace_ctas)
