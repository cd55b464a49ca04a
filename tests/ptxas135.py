"""ptxas 13.5, the legality oracle of the PTX ISA 9.2+ tests (it knows `.version` 1.0-9.5; the
CUDA 13.0 ptxas on PATH stops at 9.0). Found as $PTXAS, else in the `nvidia-cuda-nvcc` 13.5 wheel
(`pip install nvidia-cuda-nvcc==13.5.37`: nvidia/cu13/bin/ptxas), else in the shared venv of this
workplace; tests that need it skip, saying so, when none of these is ptxas 13.5 or newer.

    verdict(ptx, arch) -> (accepted: bool, message)
"""
from __future__ import annotations

import functools
import importlib.util
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

CANDIDATES = ("/work/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas",)


def _version(path: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+)\.(\d+)", out)
    return (int(m[1]), int(m[2])) if m else None


@functools.cache
def find() -> str | None:
    paths = [os.environ.get("PTXAS")]
    spec = importlib.util.find_spec("nvidia")
    for loc in (spec.submodule_search_locations or []) if spec else []:
        paths.append(str(Path(loc) / "cu13" / "bin" / "ptxas"))
    paths += CANDIDATES
    for p in paths:
        if p and Path(p).is_file() and (_version(p) or (0, 0)) >= (13, 5):
            return p
    return None


def need() -> str:
    p = find()
    if p is None:
        pytest.skip("ptxas 13.5 not found ($PTXAS, or pip install nvidia-cuda-nvcc==13.5.37)")
    return p


def verdict(ptx: str, arch: str = "sm_100a") -> tuple[bool, str]:
    """ptxas 13.5's verdict on the module `ptx` for `arch` (no output kept)."""
    exe = need()
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        r = subprocess.run([exe, f"-arch={arch}", str(src), "-o", str(Path(d) / "k.cubin")],
                           capture_output=True, text=True, timeout=120)
    return r.returncode == 0, (r.stdout + r.stderr).strip()
