"""Every instruction in the spec's "Examples" blocks (shared/spec) parses, and is valid, except
the spec's own slips listed here -- each of which ptxas 13.0 also rejects (checked by hand:
"Incorrect video selector for operand 0", "Illegal secondary operation for video instruction
'vset4'", "Unexpected instruction types specified for 'alloca'", ".block_scale modifier
required")."""
import re
from pathlib import Path

import pytest

from ptxsim.errors import PtxSyntaxError
from ptxsim.ptx import errors_of, parse_instruction, validate

# shared/ sits beside the checkout (developers and CI alike)
SPEC = Path(__file__).resolve().parents[2].parent / "shared" / "spec"
pytestmark = pytest.mark.skipif(not SPEC.exists(), reason="shared/spec not present")

# text fragments of example statements that are not PTX as written
NOT_PTX = {
    "K-Major": "a figure caption caught between two examples",
    "a-desc": "placeholder operand names with '-' (the syntax section's names)",
    "collector::a:fill": "typo for .collector::a::fill",
    "collector::b2:use": "typo for .collector::b2::use",
    "... stackrestore": "'...' elision",
}
# example statements that parse but are illegal, with the diagnostic we expect
SPEC_SLIPS = {
    "tcgen05.mma.cta_group::1.kind::mxf8f6f4 [taddr2]": "requires .block_scale",
    "tcgen05.mma.cta_group.kind ": "not valid",                 # placeholders left in
    "alloca ptr, size, 8": "requires a .type",
    "vmin4.s32.u32.u32.add r1.b00": "selector '.b00'",
    "vset4.u32.u32.ne.max": "'.max' is not valid",
    # 9.7.16.6 example: ptxas 13.5 "Modifier '.relaxed' requires scope with 'st' instruction"
    "st.relaxed.b32 [flag], 1": "qualifier '.relaxed'",
    "ld.relaxed.b32 r, [flag]": "qualifier '.relaxed'",
}


def example_statements():
    if not SPEC.exists():
        return []
    text = (SPEC / "tcgen05-chapter-stack-video-misc.txt").read_text()
    blocks = re.findall(r"\nExamples\n(.*?)(?=\n9\.7\.\d|\Z)", text, re.S)
    md = (SPEC / "mma-sp-warp-level.md").read_text()
    blocks += re.findall(r"```\n(.*?)```", md.split("Examples of half")[1], re.S)
    out = []
    for b in blocks:
        for s in re.sub(r"//[^\n]*", "", b).split(";"):
            s = " ".join(s.split())
            s = re.sub(r"^(Example \d+:\s*)", "", s)
            s = re.sub(r"^[A-Za-z_]\w*:\s+(?=[a-z@])", "", s)          # leading label
            if s and not s.startswith((".reg", "Example")):
                out.append(s)
    return out


STATEMENTS = example_statements()


def test_enough_examples_found():
    assert len(STATEMENTS) > 100


@pytest.mark.parametrize("stmt", STATEMENTS)
def test_spec_example(stmt):
    skip = [k for k in NOT_PTX if k in stmt]
    if skip:
        with pytest.raises(PtxSyntaxError):
            parse_instruction(stmt)
        return
    inst = parse_instruction(stmt)
    target = "sm_120a" if inst.opcode == "mma" else "sm_103a" if inst.has(".red") else "sm_100a"
    errs = errors_of(validate(inst, target=target, ptx_version="9.1"))
    slip = [v for k, v in SPEC_SLIPS.items() if k in stmt]
    if slip:
        assert any(slip[0] in e.message for e in errs), [e.message for e in errs]
    else:
        assert errs == [], [e.message for e in errs]
