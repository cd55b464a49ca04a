"""Coverage report: for every PTX file in the test data, the instructions ptxsim's executor
cannot run (machine/coverage.py: each instruction's handler built as a launch builds it).

    python scripts/ptx_coverage.py [PATH ...] [--json OUT.json] [--fail]

PATH: PTX files or folders (default: every *.ptx / *.ptx.xz under tests/, the PTX kernels embedded in the
test modules as string constants that start with `.version`, and every kernel ptxas accepted in
the ptxas corpus tests/data/ptx/ptxas_corpus.json, one instruction each). Prints one line per gap
(`file:line: instruction -- reason`), then a summary grouped by reason; --json writes the same
as data; --fail exits 1 when any gap is found. `ptxsim check FILE` prints the same gaps as
warnings for one file.
"""
from __future__ import annotations

import argparse
import ast
import collections
import json
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ptxsim.machine.coverage import unexecutable  # noqa: E402


def embedded_kernels(py: Path):
    """(name, text) of the module-level string constants of a test module that are whole PTX
    modules (start with `.version`, hold an `.entry`), without importing the module."""
    try:
        tree = ast.parse(py.read_text())
    except SyntaxError:
        return
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        text = None
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            text = node.value.value
        if isinstance(target, ast.Name) and text and text.lstrip().startswith(".version") \
                and ".entry" in text and "{" not in text.split(".entry")[0].replace("{{", ""):
            if "{{" in text:                                   # a str.format template
                continue
            yield f"{py.relative_to(ROOT)}::{target.id}", text


def _read(p: Path) -> str:
    if p.suffix == ".xz":
        import lzma
        return lzma.decompress(p.read_bytes()).decode()
    return p.read_text()


def ptx_files(base: Path):
    return sorted(list(base.rglob("*.ptx")) + list(base.rglob("*.ptx.xz")))


def sources(paths):
    if not paths:
        for p in ptx_files(ROOT / "tests"):
            yield str(p.relative_to(ROOT)), _read(p)
        for py in sorted((ROOT / "tests").rglob("test_*.py")):
            yield from embedded_kernels(py)
        corpus = ROOT / "tests" / "data" / "ptx" / "ptxas_corpus.json"
        if corpus.exists():
            for c in json.loads(corpus.read_text())["cases"]:
                if c.get("ptxas_ok"):
                    yield f"{corpus.relative_to(ROOT)}#{c['id']}", c["ptx"]
        return
    for arg in paths:
        p = Path(arg)
        for f in (ptx_files(p) if p.is_dir() else [p]):
            yield str(f), _read(f)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--json", metavar="OUT")
    ap.add_argument("--fail", action="store_true")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")        # handler-building notes (e.g. video operands)
    report, n_files, errors = [], 0, []
    for name, text in sources(args.paths):
        n_files += 1
        try:
            gaps = unexecutable(text)
        except Exception as e:                       # noqa: BLE001 (a file ptxsim cannot parse)
            errors.append((name, f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"))
            continue
        for g in gaps:
            report.append({"file": name, "line": g.line, "instruction": g.instruction,
                           "reason": g.reason})
            print(f"{name}:{g.line}: {g.instruction}  -- {g.reason}")
    for name, why in errors:
        print(f"{name}: not checked: {why}")
    by_reason = collections.Counter(r["reason"].split(": ", 1)[-1] for r in report)
    print(f"\n{n_files} modules, {len(report)} instructions the executor cannot run, "
          f"{len(errors)} modules not parsed")
    for why, n in by_reason.most_common():
        print(f"  {n:4d}  {why}")
    if args.json:
        Path(args.json).write_text(json.dumps({"modules": n_files, "gaps": report,
                                               "not_parsed": errors}, indent=1))
    return 1 if args.fail and (report or errors) else 0


if __name__ == "__main__":
    sys.exit(main())
