"""Real compiler output parses and validates without error: Triton 3.9 and the CuTe DSL 4.8.1,
both for sm_100a, generated offline by scripts/gen_triton_ptx.py and scripts/gen_cute_ptx.py."""
import time
from collections import Counter
from pathlib import Path

import pytest

from ptxsim.ptx import errors_of, parse_module, validate

DATA = Path(__file__).parents[1] / "data/ptx"
FIXTURES = sorted(DATA.glob("triton/*.ptx")) + sorted(DATA.glob("cute/*.ptx"))


def test_fixture_set_is_complete():
    names = {p.stem for p in FIXTURES}
    assert {"matmul_bf16", "matmul_fp8", "tma_matmul", "tma_matmul_ws", "dot_scaled_e4m3_e4m3",
            "dot_scaled_e2m1_e2m1"} <= names
    assert {"cute_dense_gemm_f16_1cta", "cute_dense_gemm_f16_2cta", "cute_blockscaled_mxf8_1cta",
            "cute_blockscaled_nvf4_2cta"} <= names


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_compiler_output_is_valid(path):
    m = parse_module(path.read_text(), str(path))
    assert m.target == "sm_100a" and m.entries
    errs = errors_of(validate(m))
    assert errs == [], "\n".join(map(str, errs[:10]))
    ops = Counter(i.opcode for i in m.instructions)
    assert ops["tcgen05.mma"] >= 1 and ops["tcgen05.alloc"] >= 1


def test_fixture_content_is_understood():
    """Spot checks against the text of the files (read with grep, not with ptxsim)."""
    m = parse_module((DATA / "cute/cute_blockscaled_nvf4_2cta.ptx").read_text())
    mmas = [i for i in m.instructions if i.opcode == "tcgen05.mma"]
    assert {i.value(".kind") for i in mmas} == {"mxf4nvf4"}
    assert {i.get(".cta_group") for i in mmas} == {".cta_group::2"}
    assert all(i.has(".block_scale", ".collector::a::discard") for i in mmas)
    assert all(len(i.operands) == 7 and i.operands[4].kind == "addr" for i in mmas)
    cps = [i for i in m.instructions if i.opcode == "tcgen05.cp"]
    assert cps and all(i.has(".32x128b", ".warpx4") for i in cps)
    ws = parse_module((DATA / "triton/tma_matmul_ws.ptx").read_text())
    counts = [i.operands[0].value for i in ws.instructions if i.opcode == "setmaxnreg"]
    assert set(counts) == {24, 256}


def test_parse_speed_10k_lines():
    text = (DATA / "triton/matmul_bf16.ptx").read_text()
    head, _, rest = text.partition("$L__func_begin0:")
    body, _, tail = rest.partition("\tret;")
    lines = [ln for ln in body.splitlines() if ln.strip() and not ln.strip().startswith(("$", "//", "."))
             and "bra" not in ln]
    big = head + "$L__func_begin0:\n" + "\n".join((lines * (10_000 // len(lines) + 1))[:10_000]) + "\n\tret;" + tail
    assert big.count("\n") >= 10_000
    t = time.perf_counter()
    m = parse_module(big)
    elapsed = time.perf_counter() - t
    assert len(m.instructions) >= 9_000             # a few lines are { } of inline asm
    assert elapsed < 20, f"10k lines took {elapsed:.1f} s"


ALL_PTX = sorted(Path(__file__).parents[1].glob("**/*.ptx")) + \
    sorted(Path(__file__).parents[1].glob("**/*.ptx.xz"))


@pytest.mark.parametrize("path", ALL_PTX, ids=lambda p: p.name)
def test_every_ptx_file_of_the_suite_is_valid(path):
    """Every PTX file the tests run (compiler output, hand-written kernels, hardware probes)
    passes `ptxsim check`: ptxsim.launch refuses modules that do not."""
    import lzma
    text = lzma.open(path, "rt").read() if path.suffix == ".xz" else path.read_text()
    errs = errors_of(validate(parse_module(text, str(path))))
    assert errs == [], "\n".join(map(str, errs[:5]))
