"""A second copy of ptxsim, from another git revision, importable next to the working tree's as
`ptxsim_base`, so that a benchmark can time both in one process on this noisy machine
(alternating rounds see the same load).

    from _baseline import load_baseline
    base = load_baseline("main")          # -> the ptxsim_base package (numerics, machine, ...)
"""
from __future__ import annotations

import importlib
import io
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_baseline(rev: str):
    """Extract src/ptxsim of git revision `rev` into a temporary directory, rename the package
    to ptxsim_base (imports rewritten), import and return it."""
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src/ptxsim"],
                         check=True, capture_output=True).stdout
    tmp = Path(tempfile.mkdtemp(prefix="ptxsim_base_"))
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(tmp, filter="data")
    pkg = tmp / "src" / "ptxsim"
    pkg = pkg.rename(tmp / "ptxsim_base")
    pat = re.compile(r"\bptxsim(?=[.\s])")
    for f in pkg.rglob("*.py"):
        f.write_text(pat.sub("ptxsim_base", f.read_text()))
    sys.path.insert(0, str(tmp))
    return importlib.import_module("ptxsim_base")
