"""A second copy of ptxsim, from another git revision, importable next to the working tree's as
`ptxsim_base`, so that a benchmark can time both in one process on this noisy machine
(alternating rounds see the same load).

    from _baseline import load_baseline
    base = load_baseline("main")          # -> the ptxsim_base package (numerics, machine, ...)
    share_compiled_loop(base, "main")     # the same compiled MMA arithmetic on both sides
"""
from __future__ import annotations

import importlib
import io
import re
import shutil
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


def share_compiled_loop(base_pkg, rev: str) -> None:
    """`git archive` carries no built extension, so the baseline would run the numpy fallback
    of the MMA arithmetic. Give it the compiled loop too, so that both sides time the same kind
    of arithmetic: this tree's build when the baseline's _fdpa.c is this tree's, else the
    baseline's own _fdpa.c built with the baseline's setup.py (a warning if that fails)."""
    from ptxsim.numerics import backend
    base_backend = importlib.import_module(base_pkg.__name__ + ".numerics.backend")
    if base_backend.compiled is not None or backend.compiled is None:
        return
    root = ROOT
    pkg_dir = Path(base_pkg.__file__).parent
    src = subprocess.run(["git", "-C", str(root), "show", f"{rev}:src/ptxsim/numerics/_fdpa.c"],
                         capture_output=True).stdout
    if src == (root / "src/ptxsim/numerics/_fdpa.c").read_bytes():
        so = Path(backend.compiled.__file__)
        shutil.copy(so, pkg_dir / "numerics" / so.name)
    else:
        setup_py = subprocess.run(["git", "-C", str(root), "show", f"{rev}:setup.py"],
                                  capture_output=True, text=True).stdout
        setup_py = setup_py.replace("src/ptxsim/numerics/_fdpa.c",
                                    f"{pkg_dir.name}/numerics/_fdpa.c").replace(
            '"ptxsim.numerics._fdpa_c"', f'"{pkg_dir.name}.numerics._fdpa_c"')
        (pkg_dir.parent / "setup_base.py").write_text(setup_py)
        built = subprocess.run([sys.executable, "setup_base.py", "-q", "build_ext", "--inplace"],
                               cwd=pkg_dir.parent, capture_output=True, text=True)
        if built.returncode or not list((pkg_dir / "numerics").glob("_fdpa_c*")):
            print(f"warning: could not build {rev}'s _fdpa.c; the baseline runs the numpy "
                  f"arithmetic\n{built.stderr[-2000:]}", flush=True)
            return
        print(f"built {rev}'s _fdpa.c for the baseline", flush=True)
    base_backend.compiled = importlib.import_module(base_pkg.__name__ + ".numerics._fdpa_c")
    base_backend.select("c")
