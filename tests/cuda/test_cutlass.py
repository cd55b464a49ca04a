"""CUTLASS C++ examples, unmodified, under `ptxsim exec`. Each example verifies its own result
against CUTLASS's reference and prints "Passed"; that is the oracle.

The examples are built by scripts/build_cutlass_examples.py (CUTLASS 4.2.0's C++ tree from its
PyPI wheel, fetched into the cache; PTX only for sm_100a, `-cudart shared`; docs/cudacpp.md), or
by you into a folder named by PTXSIM_CUTLASS_BIN. One example (70 fp8) is built and run in the
default suite when nvcc, CCCL and cuRAND's headers are installed (`pip install .[cudacpp]`, part
of the test extra); the whole list is slow (opt in with -m slow)."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ptxsim import cuda

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_cutlass_examples",
                                               ROOT / "scripts" / "build_cutlass_examples.py")
build_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_script)

BIN = os.environ.get("PTXSIM_CUTLASS_BIN") or str(build_script.default_out(None))
needs_stand_ins = pytest.mark.skipif(cuda.native_path("cudart") is None,
                                     reason="ptxsim's CUDA stand-ins were not built")

SMALL = ["--m=256", "--n=128", "--k=128"]
EXAMPLES = {                                       # name: (arguments, "Passed" lines expected)
    "70_fp16": (SMALL + ["--iterations=0"], 1),    # 70_blackwell_fp16_gemm
    "70_fp8": (SMALL + ["--iterations=0"], 1),     # 70_blackwell_fp8_gemm
    "71": (["--m=256", "--n=256", "--k=128"], 10),  # every kernel of the collective builder
    "72a": (["--m=256", "--n=256", "--k=256", "--iterations=0"], 1),   # nvfp4 x nvfp4 -> bf16
    "72b": (["--m=256", "--n=256", "--k=256", "--iterations=0"], 1),   # nvfp4 -> nvfp4 + SF
    "72c": (["--m=256", "--n=256", "--k=256", "--iterations=0"], 1),   # mxfp8 x mxfp4 (16U4_A16B)
    "75": (["--m=256", "--n=256", "--k=128", "--groups=2", "--iterations=0"], 2),  # 1SM, 2SM
    "81": (["--m=256", "--n=128", "--k=256", "--iterations=0"], 1),    # blockwise scaling
    "83": (["--m=256", "--n=128", "--k=256", "--iterations=0"], 1),    # 2:4 sparse
}


BLOCKED: dict[str, str] = {}                       # name: why it cannot pass yet


def _run(exe: Path, name: str) -> None:
    args, n_passed = EXAMPLES[name]
    r = subprocess.run([sys.executable, "-m", "ptxsim", "exec", str(exe), *args],
                       capture_output=True, text=True, timeout=3600)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "Failed" not in r.stdout, out[-4000:]
    assert r.stdout.count("Passed") >= n_passed, out[-4000:]
    assert "findings: none" in r.stderr


@pytest.mark.slow
@needs_stand_ins
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=BLOCKED[n],
                                                                          strict=True))
                                  if n in BLOCKED else n for n in sorted(EXAMPLES)])
def test_cutlass_example_passes_its_own_check(name):
    exe = Path(BIN) / name
    if not exe.exists():
        pytest.skip(f"{exe} is not built (scripts/build_cutlass_examples.py {name}, or set "
                    f"PTXSIM_CUTLASS_BIN)")
    _run(exe, name)


@needs_stand_ins
def test_cutlass_example_built_by_the_script_passes_end_to_end(tmp_path):
    """The default suite's end-to-end CUDA C++ run: the repository's script builds CUTLASS
    example 70 (fp8 GEMM, 1-SM tcgen05 with TMA) from the pinned CUTLASS source, and the unmodified
    binary prints its own "Passed" under `ptxsim exec`."""
    try:
        nvcc = build_script.find_nvcc()
        build_script.include_flags(nvcc)
    except build_script.BuildError as e:
        pytest.skip(f"the CUDA toolchain is incomplete: {e}")
    src = os.environ.get("PTXSIM_CUTLASS_SRC")
    try:
        src = Path(src) if src else build_script.fetch_source()
    except build_script.BuildError as e:
        pytest.skip(f"the CUTLASS source is not in the cache and could not be fetched: {e}")
    exe = build_script.build("70_fp8", src, build_script.default_out(
        None if not os.environ.get("PTXSIM_CUTLASS_SRC") else src), nvcc)
    _run(exe, "70_fp8")


def test_the_build_script_names_what_is_missing(tmp_path, monkeypatch):
    """Bad input to the script: an unknown example, no nvcc anywhere: a sentence, exit status 2."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_cutlass_examples.py"),
                        "99_nope", "--src", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown example(s) 99_nope" in r.stderr
    monkeypatch.setattr(build_script, "_nvidia_dirs", lambda: [])
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("NVCC", raising=False)
    with pytest.raises(build_script.BuildError, match="no nvcc"):
        build_script.find_nvcc(str(tmp_path / "nvcc"))
