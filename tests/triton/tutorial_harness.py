"""Run one of Triton's tutorials (from the upstream cache, scripts/fetch_upstream.py) on ptxsim.

A tutorial runs as written, with the changes listed next to each test; only these kinds:
- sizes made smaller (ptxsim is a CPU simulator) and the benchmark calls removed;
- `device="cuda"` -> `device="cpu"` (ptxsim's memory is the host's: tensors are CPU tensors);
- cuBLAS, the tutorials' comparison library, absent (`nvidia.cublas.CublasLt(...)` -> None, the
  tutorials' own no-cuBLAS branch);
- for code after `if __name__ == "__main__":` (argument parsing, benchmarks), the validation
  calls it makes, at the smaller sizes.
`torch.cuda.get_device_capability` / `get_device_properties`, which a tutorial asks about the GPU,
answer for ptxsim's target while it runs (CPU torch has no CUDA device to ask).
Every launch runs under the sanitizer (its default mode); a tutorial with an error finding fails,
listing them (ptxsim.triton.FindingWarning), unless the test allows that finding by kind and
tutorial line (`allow`), with the reason in docs/triton.md.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import sys
import warnings
from pathlib import Path

import pytest

from ptxsim.triton import FindingWarning
from ptxsim.triton.compat import torch_cuda_answers

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from fetch_upstream import cache_dir  # noqa: E402

sys.path.pop(0)

COMMON = [
    ('device="cuda"', 'device="cpu"'),
    ("device='cuda'", "device='cpu'"),
    ('device = "cuda"', 'device = "cpu"'),
    ("nvidia.cublas.CublasLt(", "(lambda workspace: None)("),
]


def tutorial_source(name: str) -> Path:
    base = cache_dir("triton")
    if base is None:
        pytest.skip("Triton's upstream files are not cached (python scripts/fetch_upstream.py "
                    "triton; PTXSIM_UPSTREAM_CACHE)")
    path = base / "python" / "tutorials" / f"{name}.py"
    if not path.is_file():
        pytest.skip(f"{path} is not in the upstream cache")
    return path


def _findings(message: str):
    """(kind, tutorial line or None, text) of each error finding in a FindingWarning's text."""
    out = []
    for line in message.splitlines():
        m = re.match(r"\S+\.ptx:\d+: error: \[([\w-]+)\]", line)
        if m:
            out.append([m[1], None, line])
        elif out and out[-1][1] is None:
            src = re.match(r"\s+Triton source \S+?\.py:(\d+):", line)
            if src:
                out[-1][1] = int(src[1])
    return [tuple(f) for f in out]


def run_tutorial(name: str, tmp_path: Path, changes=(), append: str = "", common=True,
                 allow=()):
    """Run tutorial `name` with `changes` [(old, new), ...] (each must occur in the source) and
    `append` (code run after it); returns (module globals, printed text). `allow`: sanitizer
    findings tolerated, as (kind, line of the tutorial's source)."""
    src = tutorial_source(name).read_text()
    for old, new in list(changes) + (COMMON if common else []):
        if (old, new) in changes and old not in src:
            raise AssertionError(f"tutorial {name}: {old!r} is not in the source any more; "
                                 "update the test's changes")
        src = src.replace(old, new)
    src += "\n" + append
    path = tmp_path / f"{name.replace('-', '_')}.py"
    path.write_text(src)
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with torch_cuda_answers(), contextlib.redirect_stdout(out), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FindingWarning)
            ns = runpy.run_path(str(path), run_name="ptxsim_tutorial")
    finally:
        os.chdir(cwd)
    found = [f for w in caught if issubclass(w.category, FindingWarning)
             for f in _findings(str(w.message)) if (f[0], f[1]) not in set(allow)]
    if found:
        raise AssertionError(f"tutorial {name}: the sanitizer found errors: "
                             "\n" + "\n".join(f"{k} (tutorial line {ln}): {t}"
                                                for k, ln, t in found[:6]))
    return ns, out.getvalue()
