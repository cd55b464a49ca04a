"""Property: on any mutation of real PTX, the parser and validator either succeed or raise a
ptxsim error (PtxsimError) -- never another exception. The >= 1M-input run lives in
scripts/fuzz_frontend.py; this is its CI-sized sibling driven by hypothesis."""
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptxsim.errors import PtxsimError
from ptxsim.ptx import parse_instruction, parse_module, validate

DATA = Path(__file__).parents[1] / "data/ptx"
CASES = json.loads((DATA / "ptxas_corpus.json").read_text())["cases"]
INSTRS = [c["instruction"] for c in CASES]
_lines = (DATA / "cute/cute_dense_gemm_f16_2cta.ptx").read_text().splitlines()
MODULES = [c["ptx"] for c in CASES[::25]] + [
    "\n".join(_lines[:8]) + "\n.visible .entry w()\n{\n" + "\n".join(_lines[k:k + 40]) + "\n}\n"
    for k in range(0, len(_lines), 60)]
TOKENS = list("{}[](),;:.%$@!-+|_<>\"/*\n 0123456789abcdefx") + [
    ".reg", ".b32", "%r1", "::", ".x2", ".cta_group::1", "0f3F800000", "99999999999999999999",
    "{%r1, %r2}", "[%r1+4]", "@%p1 ", ".entry", "//", "/*", "L1:", "bra L1;", "%r<100000000>"]


@st.composite
def mutated(draw, seeds):
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.integers(0, 3))
        if op == 0:
            text = text[:i] + text[i + draw(st.integers(1, 12)):]
        elif op == 1:
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]
        elif op == 2:
            text = text[:i]
        else:
            lines = text.split("\n")
            a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
    return text


FAST = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(mutated(INSTRS), st.sampled_from(["sm_100a", "sm_103a", "sm_90a", "sm_120a", "sm_80"]))
def test_instruction_fuzz(text, target):
    try:
        validate(parse_instruction(text), target=target, ptx_version="9.0")
    except PtxsimError:
        pass


@FAST
@given(mutated(MODULES))
def test_module_fuzz(text):
    try:
        validate(parse_module(text))
    except PtxsimError:
        pass


@FAST
@given(st.lists(st.sampled_from(TOKENS), max_size=60))
def test_random_token_soup(tokens):
    text = " ".join(tokens)
    try:
        validate(parse_module(".version 9.0\n.target sm_100a\n.entry k() {\n" + text + "\n}\n"))
    except PtxsimError:
        pass
