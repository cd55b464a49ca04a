"""The package's layers (docs/ARCHITECTURE.md): no import cycle inside src/ptxsim, and no module
imports a higher layer. Every `import` statement counts, also one inside a function (a
function-local import that dodges a cycle is still a cycle).

The import graph is read from the source with `ast` (nothing is imported). An edge A -> B for
every ptxsim module B that an import statement in A names, plus B's enclosing packages (their
`__init__` runs first), except the packages that enclose A itself (they are already being
imported when A runs). `from P import x` is an edge to P.x when x is a submodule, else to P.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "ptxsim"

# lowest first; a module may import its own layer and lower ones. The front doors (api, cli and
# the future triton / cuda / cute / distributed packages) sit on top, with the package's
# __init__ (`ptxsim`: `__version__` and the re-exported `launch` / `execute`).
LAYERS = [
    ("base", ("ptxsim.errors", "ptxsim.types")),
    ("numerics", ("ptxsim.numerics",)),
    ("isa", ("ptxsim.isa",)),
    ("ptx", ("ptxsim.ptx",)),
    ("machine", ("ptxsim.machine",)),
    ("front doors", ("ptxsim.api", "ptxsim.cli", "ptxsim.__main__", "ptxsim.testing",
                     "ptxsim.triton", "ptxsim.cuda", "ptxsim.cute", "ptxsim.distributed",
                     "ptxsim.cudart", "ptxsim")),
]


def layer_of(module: str) -> int:
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    if rank is None:
        raise AssertionError(f"{module} is in no layer of tests/test_architecture.py LAYERS; "
                             "add it there (and to docs/ARCHITECTURE.md)")
    return rank


def modules(root: Path = ROOT) -> dict[str, Path | None]:
    """Module name -> source file (None for a compiled extension: built ones, and those setup.py
    declares, so that the graph is the same before the build)."""
    out: dict[str, Path | None] = {}
    setup = root.parents[1] / "setup.py"
    if setup.exists():
        for name in re.findall(r"Extension\(\s*[\"']([\w.]+)[\"']", setup.read_text()):
            out[name] = None
    for p in root.rglob("*"):
        rel = p.relative_to(root.parent)
        if p.suffix == ".py":
            name = ".".join(rel.with_suffix("").parts)
            out[name.removesuffix(".__init__")] = p
        elif p.suffix in (".so", ".pyd"):
            out[".".join(rel.parent.parts + (p.name.split(".")[0],))] = None
    return out


def _targets(mod: str, is_pkg: bool, node, known) -> list[tuple[str, int]]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = mod.split(".") if is_pkg else mod.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            b = ".".join(base + ([node.module] if node.module else []))
        else:
            b = node.module or ""
        subs = [f"{b}.{a.name}" for a in node.names if f"{b}.{a.name}" in known]
        names = subs + ([b] if len(subs) < len(node.names) else [])
    return [(n, node.lineno) for n in names if n == "ptxsim" or n.startswith("ptxsim.")]


def import_graph(root: Path = ROOT) -> dict[str, dict[str, int]]:
    """module -> {imported ptxsim module: line of the (first) import statement}."""
    known = modules(root)
    graph: dict[str, dict[str, int]] = {}
    for mod, path in known.items():
        edges: dict[str, int] = {}
        graph[mod] = edges
        if path is None:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target, line in _targets(mod, path.name == "__init__.py", node, known):
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
                parts = target.split(".")
                for i in range(1, len(parts) + 1):
                    t = ".".join(parts[:i])
                    encloses_me = mod.startswith(t + ".") and t != target
                    if t in known and t != mod and not encloses_me:
                        edges.setdefault(t, line)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def layer_violations(graph: dict[str, dict[str, int]]) -> list[str]:
    bad = []
    for mod, edges in graph.items():
        for target, line in edges.items():
            if layer_of(target) > layer_of(mod):
                bad.append(f"{mod} (line {line}) imports {target}: layer "
                           f"'{LAYERS[layer_of(mod)][0]}' may not import layer "
                           f"'{LAYERS[layer_of(target)][0]}'")
    return bad


def _describe(graph, comp):
    members = set(comp)
    return "; ".join(f"{a} -> {b} (line {ln})" for a in comp for b, ln in graph[a].items()
                     if b in members)


def test_no_import_cycle_in_src():
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles in src/ptxsim:\n" + "\n".join(
        _describe(graph, c) for c in found)


def test_no_import_from_a_higher_layer():
    bad = layer_violations(import_graph())
    assert not bad, "imports against the layers (docs/ARCHITECTURE.md):\n" + "\n".join(bad)


def test_every_module_has_a_layer():
    for mod in modules():
        layer_of(mod)


# ---------------------------------------------------------------- the checks themselves fire
def _tree(tmp_path, files: dict[str, str]) -> Path:
    root = tmp_path / "ptxsim"
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_a_function_local_import_cycle_is_found(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "machine/__init__.py": "",
        "machine/a.py": "from ptxsim.machine.b import g\n",
        "machine/b.py": "def g():\n    from ptxsim.machine import a\n    return a\n",
    })
    graph = import_graph(root)
    assert cycles(graph) == [["ptxsim.machine.a", "ptxsim.machine.b"]]
    assert graph["ptxsim.machine.b"] == {"ptxsim.machine.a": 2}


def test_a_relative_import_cycle_through_a_package_init_is_found(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "isa/__init__.py": "from .x import f\n",
        "isa/x.py": "def f():\n    pass\n",
        "machine/__init__.py": "",
        "machine/m.py": "from ptxsim.isa.x import f\n",
        "numerics/__init__.py": "",
        "numerics/n.py": "from ..isa import x\n",
        "ptx/__init__.py": "from ptxsim.numerics import n\n",
    })
    graph = import_graph(root)
    # machine.m -> isa.x also runs isa/__init__; numerics.n -> isa.x is against the layers
    assert graph["ptxsim.machine.m"] == {"ptxsim.isa": 1, "ptxsim.isa.x": 1}
    bad = layer_violations(graph)
    assert any(b.startswith("ptxsim.numerics.n (line 1) imports ptxsim.isa") for b in bad)


def test_a_submodule_importing_its_sibling_through_the_package_is_no_cycle(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "numerics/__init__.py": "from ptxsim.numerics.engine import mma\n",
        "numerics/engine.py": "from ptxsim.numerics import fdpa\n\ndef mma():\n    pass\n",
        "numerics/fdpa.py": "",
    })
    assert cycles(import_graph(root)) == []


def test_a_name_from_the_own_package_init_is_a_cycle(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "numerics/__init__.py": "from ptxsim.numerics.engine import mma\nX = 1\n",
        "numerics/engine.py": "from ptxsim.numerics import X\n\ndef mma():\n    pass\n",
    })
    assert cycles(import_graph(root)) == [["ptxsim.numerics", "ptxsim.numerics.engine"]]


@pytest.mark.parametrize("low,high", [("types/codec.py", "ptxsim.numerics"),
                                      ("isa/x.py", "ptxsim.ptx"),
                                      ("machine/x.py", "ptxsim.api")])
def test_an_import_from_a_higher_layer_is_found(tmp_path, low, high):
    files = {"__init__.py": "", low.split("/")[0] + "/__init__.py": "",
             low: f"def f():\n    import {high}\n", "numerics/__init__.py": "",
             "ptx/__init__.py": "", "api.py": ""}
    bad = layer_violations(import_graph(_tree(tmp_path, files)))
    assert len(bad) == 1 and f"imports {high}" in bad[0] and "(line 2)" in bad[0]
