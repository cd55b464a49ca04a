"""The sanitizer's findings through `ptxsim exec` (an nvcc-built CUDA C++ program): each launch's
findings on stderr (kind, PTX line, CTA / warp / lane, the earlier access) and, with
--fail-on-findings, exit status 1 on an error finding. The mutant leaves out the barrier between
a shared-memory store and another warp's load of it (tests/sanitizer/data/); the unmutated
program reports nothing. (`ptxsim cute`: main's own report, tests/cuda.)"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ptxsim import cuda

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(Path(__file__).parents[1]))
import toolchain  # noqa: E402

NVCC = toolchain.nvcc()
PTX_ONLY = ["-cudart", "shared", "-gencode", "arch=compute_100a,code=compute_100a"]


def _ptxsim(*args):
    return subprocess.run([sys.executable, "-m", "ptxsim", *map(str, args)], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed (the test compiles a CUDA "
                                         "C++ program with it)")
@pytest.mark.skipif(cuda.native_path("cudart") is None,
                    reason="ptxsim's CUDA stand-ins were not built (no shared libpython?)")
def test_ptxsim_exec_reports_a_shared_memory_race(tmp_path):
    src = DATA / "smem_before_sync.cu"
    mutant, fixed = tmp_path / "mutant", tmp_path / "fixed"
    for exe, flags in ((mutant, ["-DMUTANT"]), (fixed, [])):
        r = subprocess.run([NVCC, *PTX_ONLY, *flags, str(src), "-o", str(exe)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    r = _ptxsim("exec", "--fail-on-findings", "--report", tmp_path / "r.jsonl", mutant)
    assert r.stdout.startswith("no error"), r.stdout + r.stderr      # the program ran to its end
    assert r.returncode == 1, r.stderr                  # it exited 0; the finding makes it 1
    assert "sanitizer: 1 error(s), 0 warning(s)" in r.stderr
    assert "error: [race-shared] read races with an earlier write by another warp" in r.stderr
    # (nvcc 13.0 writes ld.shared.u32, 13.5 ld.shared.b32)
    assert re.search(r"ld\.shared\.[ub]32", r.stderr) and "earlier: line" in r.stderr
    assert "(CTA (0, 0, 0), warp 0, lane 0;" in r.stderr
    (launch,) = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()
                 if json.loads(x)["event"] == "launch"]
    (f,) = launch["sanitizer"]
    assert f["kind"] == "race-shared" and f["severity"] == "error"
    assert isinstance(f["line"], int) and f["earlier"]["line"] < f["line"]
    assert f["cta"] == [0, 0, 0] and f["warp"] == 0
    # the barrier in place: the same checks, nothing to report, the program's status
    r = _ptxsim("exec", "--fail-on-findings", fixed)
    assert r.returncode == 0 and r.stdout.strip() == "no error mismatches 0", r.stderr
    assert "sanitizer: 0 error(s), 0 warning(s)" in r.stderr and "[race-shared]" not in r.stderr
