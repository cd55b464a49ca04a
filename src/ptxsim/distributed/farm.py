"""Farms: many independent launches (kernel files x shapes x targets x modes), run sequentially,
in worker processes on this machine, or as Ray tasks, collected into one table (and JSON). A
task that fails — a named ptxsim error, a failed check, a worker that died — is one failed row;
it never stops the others.

`farm(tasks, workers=...)` takes `Task`s, a spec dict, or the path of a JSON / TOML spec
(`load_spec`); `ptxsim farm SPEC` is the command line. docs/distributed.md has the spec format.
"""
from __future__ import annotations

import ast
import hashlib
import json
import multiprocessing as mp
import operator
import os
import socket
import sys
import time
import traceback
import warnings
from collections import deque
from dataclasses import asdict, dataclass, field
from itertools import product
from multiprocessing.connection import wait
from pathlib import Path

import numpy as np

from ptxsim.distributed.local import available_cores, fork_context
from ptxsim.distributed.parts import start_session
from ptxsim.errors import FarmSpecError, OperandError, PtxsimError, WorkerError


@dataclass
class Task:
    """One launch of a farm. `ptx`: PTX text, or a path (str / Path) of a PTX file. `args`:
    launch arguments — values, or `ptxsim run` argument specs ("rand:float32:1024", "f32:2.0",
    "zeros:uint16:128x64", "bytes:64", "x.npy", and "tensormap:I:BOX0xBOX1[:SWIZZLE[:DTYPE]]" for
    a tensor map over argument I) made in the worker from `seed`, or a callable returning the
    list. `options`: more `ptxsim.launch` keywords (step_limit, max_resident_ctas, workers,
    sanitize, ...). `check(args)`: raises when the results in args are wrong."""
    ptx: object
    kernel: str | None = None
    grid: object = 1
    block: object = 32
    cluster: object = None
    args: object = ()
    target: str = "sm_100a"
    dynamic_shared: int = 0
    options: dict = field(default_factory=dict)
    name: str = ""
    shape: dict = field(default_factory=dict)
    seed: int = 0
    check: object = None


@dataclass
class TaskResult:
    index: int
    name: str
    kernel: str
    shape: dict
    target: str
    options: dict
    status: str                      # "ok" or "failed"
    error_type: str = ""             # the named error of a failed task
    error: str = ""
    seconds: float = 0.0             # the task in its worker: arguments, launch, check
    cpu_seconds: float = 0.0         # CPU time of the same
    launch_seconds: float = 0.0      # the launch alone
    steps: int = 0
    outputs: dict = field(default_factory=dict)     # "argN" -> sha256 (16 hex) of its bytes
    findings: list = field(default_factory=list)    # warnings and sanitizer findings, as text
    host: str = ""
    pid: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class FarmReport:
    results: list[TaskResult]
    backend: str
    workers: int
    seconds: float                   # wall time of the whole farm, in the driver
    start_seconds: float = 0.0       # starting workers / connecting to Ray

    @property
    def ok(self) -> list[TaskResult]:
        return [r for r in self.results if r.ok]

    @property
    def failures(self) -> list[TaskResult]:
        return [r for r in self.results if not r.ok]

    def to_json(self) -> str:
        return json.dumps({"backend": self.backend, "workers": self.workers,
                           "seconds": self.seconds, "start_seconds": self.start_seconds,
                           "ok": len(self.ok), "failed": len(self.failures),
                           "results": [asdict(r) for r in self.results]}, indent=1,
                          default=str)

    def table(self):
        from rich.table import Table
        t = Table(title=f"ptxsim farm: {len(self.ok)} ok, {len(self.failures)} failed, "
                        f"{self.seconds:.1f} s ({self.backend}, {self.workers} workers)")
        for col in ("#", "task", "shape", "target", "options", "status", "s", "steps",
                    "error / findings"):
            t.add_column(col, overflow="fold")
        for r in self.results:
            note = f"{r.error_type}: {r.error}" if not r.ok else "; ".join(r.findings)
            t.add_row(str(r.index), r.name, _fmt(r.shape), r.target, _fmt(r.options),
                      "[green]ok[/]" if r.ok else "[red]failed[/]", f"{r.seconds:.2f}",
                      str(r.steps), note[:300])
        return t


def _fmt(d: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in d.items())


# ---------------------------------------------------------------------------------------------
# one task, in a worker
# ---------------------------------------------------------------------------------------------
_TEXTS: dict[str, str] = {}


def _ptx_text(ptx) -> str:
    if isinstance(ptx, Path) or (isinstance(ptx, str) and "\n" not in ptx and ".entry" not in ptx):
        key = str(ptx)
        if key not in _TEXTS:
            try:
                _TEXTS[key] = Path(ptx).read_text()
            except OSError as exc:
                raise OperandError(f"PTX file '{ptx}': cannot read ({exc.strerror})") from None
        return _TEXTS[key]
    return ptx


def make_args(specs, seed: int = 0) -> list:
    """The launch arguments of a task: values pass through, strings are `ptxsim run` argument
    specs (plus tensormap:I:BOX[:SWIZZLE[:DTYPE]])."""
    from ptxsim.argspec import parse_arg
    if callable(specs):
        return list(specs())
    rng = np.random.default_rng(seed)
    out = []
    for i, s in enumerate(specs):
        if isinstance(s, str) and s.startswith("tensormap:"):
            out.append(_tensormap(s, out, i))
        elif isinstance(s, str):
            out.append(parse_arg(s, rng))
        else:
            out.append(s)
    return out


def _tensormap(spec: str, earlier: list, i: int):
    from ptxsim.machine.tensormap import TensorMap
    parts = spec.split(":")
    try:
        src = earlier[int(parts[1])]
        box = tuple(int(x) for x in parts[2].split("x"))
    except (IndexError, ValueError):
        raise OperandError(f"argument {i} '{spec}': expected tensormap:I:BOX0xBOX1[:SWIZZLE"
                           "[:DTYPE]] with I the index of an earlier array argument") from None
    kw = {}
    if len(parts) > 3 and parts[3]:
        kw["swizzle"] = parts[3]
    if len(parts) > 4 and parts[4]:
        kw["dtype"] = parts[4]
    return TensorMap.for_array(src, box, **kw)


def _digest(a) -> str:
    if type(a).__module__.startswith("torch"):
        a = a.contiguous().view(-1).view(__import__("torch").uint8).numpy()
    return hashlib.sha256(np.ascontiguousarray(a).view(np.uint8).tobytes()).hexdigest()[:16]


def run_task(task: Task, index: int = 0) -> TaskResult:
    """Run one task; every exception becomes a failed result (never raised)."""
    from ptxsim.distributed.launch import launch
    t0, c0 = time.perf_counter(), time.process_time()
    res = TaskResult(index, task.name or f"task{index}", task.kernel or "", dict(task.shape),
                     task.target, dict(task.options), "ok", host=socket.gethostname(),
                     pid=os.getpid())
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            text = _ptx_text(task.ptx)
            kernel = task.kernel
            if kernel is None:
                from ptxsim.machine.executor import _parsed
                entries = [f.name for f in _parsed(text).entries]
                if len(entries) != 1:
                    raise OperandError(f"name the kernel (entries: {', '.join(entries)})")
                kernel = res.kernel = entries[0]
            args = make_args(task.args, task.seed)
            t1 = time.perf_counter()
            run = launch(text, kernel, task.grid, task.block, task.cluster, args,
                                task.target, task.dynamic_shared, **task.options)
            res.launch_seconds = time.perf_counter() - t1
            res.steps = int(run.steps)
            res.outputs = {f"arg{i}": _digest(a) for i, a in enumerate(args)
                           if isinstance(a, np.ndarray) and a.ndim
                           or type(a).__module__.startswith("torch")}
            if task.check is not None:
                task.check(args)
        res.findings = [f"{w.category.__name__}: {w.message}" for w in caught
                        if issubclass(w.category, PtxsimError)]
        res.findings += [str(f) for f in getattr(run, "findings", None) or ()]
    except Exception as exc:           # noqa: BLE001 - one failed row, never a stopped farm
        res.status = "failed"
        res.error_type = type(exc).__name__
        res.error = str(exc) or "".join(traceback.format_exception_only(exc)).strip()
    res.seconds = time.perf_counter() - t0
    res.cpu_seconds = time.process_time() - c0
    return res


# ---------------------------------------------------------------------------------------------
# the farm
# ---------------------------------------------------------------------------------------------
def farm(tasks, workers=None, *, progress: bool | None = None, new_session: bool = True,
         base: Path | None = None) -> FarmReport:
    """Run every task and return the report. `tasks`: a list of `Task`, a spec dict, or the path
    of a JSON / TOML spec. `workers`: None (the spec's `workers`, else one per core), 1 (in
    this process, one after the other), N (N worker processes), "ray" / "ray:ADDRESS" / the
    ray module (one Ray task per farm task). `progress`: a progress bar (default: when stderr
    is a terminal)."""
    spec_workers = None
    if isinstance(tasks, (str, Path)):
        base = Path(tasks).parent
        tasks = load_spec(tasks)
    if isinstance(tasks, dict):
        spec_workers = tasks.get("workers")
        tasks = expand_spec(tasks, base or Path.cwd())
    tasks = list(tasks)
    if workers is None:
        workers = spec_workers if spec_workers is not None else available_cores()
    from ptxsim.distributed.launch import resolve_workers
    backend, n, address = resolve_workers(workers)
    if progress is None:
        progress = sys.stderr.isatty()
    bar = _bar(len(tasks)) if progress else None
    t0 = time.perf_counter()
    start = 0.0
    try:
        tick = bar[1] if bar else (lambda r: None)
        if backend == "one process" or (backend == "local" and n <= 1) or len(tasks) <= 1:
            backend, n = "one process", 1
            results = []
            for i, t in enumerate(tasks):
                results.append(run_task(t, i))
                tick(results[-1])
        elif backend == "local":
            n = min(n, len(tasks))
            results = _run_pool(tasks, n, new_session, tick)
        else:
            from ptxsim.distributed.ray_backend import cluster_cpus, connect
            ray, start = connect(address)
            n = cluster_cpus(ray)
            results = _run_ray(ray, tasks, tick)
    finally:
        if bar:
            bar[0].stop()
    return FarmReport(results, backend, n, time.perf_counter() - t0, start)


def _bar(total: int):
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    p = Progress(TextColumn("ptxsim farm"), BarColumn(), TextColumn("{task.completed}/"
                 "{task.total} tasks"), TextColumn("[red]{task.fields[failed]} failed"),
                 TimeElapsedColumn(), console=Console(stderr=True))
    task = p.add_task("farm", total=total, failed=0)
    p.start()
    failed = [0]

    def tick(r: TaskResult):
        failed[0] += not r.ok
        p.update(task, advance=1, failed=failed[0])
    return p, tick


def _pool_child(tasks, conn, new_session: bool) -> None:
    start_session(new_session)
    while True:
        try:
            i = conn.recv()
        except EOFError:              # the driver went away
            break
        if i is None:
            break
        conn.send(run_task(tasks[i], i))
    conn.close()


def _run_pool(tasks: list[Task], n: int, new_session: bool, tick) -> list[TaskResult]:
    """`n` forked workers, each taking the next task when it finishes one; a worker that dies
    fails its task (WorkerError) and is replaced."""
    ctx = fork_context()
    todo = deque(range(len(tasks)))
    results: dict[int, TaskResult] = {}
    busy: dict = {}                   # conn -> (process, task index)

    def start_worker():
        mine, theirs = ctx.Pipe()
        # not a daemon: a task may itself launch with workers=N (a daemon cannot fork workers);
        # it ends when the driver sends None or goes away
        p = ctx.Process(target=_pool_child, args=(tasks, theirs, new_session),
                        name="ptxsim-farm-worker")
        p.start()
        theirs.close()
        return mine, p

    def give(conn, p):
        if todo:
            i = todo.popleft()
            conn.send(i)
            busy[conn] = (p, i)
        else:
            conn.send(None)
            conn.close()
            p.join()

    procs = []
    try:
        for _ in range(n):
            conn, p = start_worker()
            procs.append(p)
            give(conn, p)
        while busy:
            for conn in wait(list(busy)):
                p, i = busy.pop(conn)
                try:
                    results[i] = conn.recv()
                except EOFError:
                    p.join()
                    t = tasks[i]
                    results[i] = TaskResult(i, t.name or f"task{i}", t.kernel or "",
                                            dict(t.shape), t.target, dict(t.options), "failed",
                                            "WorkerError", f"the worker process ended without a "
                                            f"result (exit code {p.exitcode})")
                    conn.close()
                    conn, p = start_worker()
                    procs.append(p)
                tick(results[i])
                give(conn, p)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join()
    return [results[i] for i in range(len(tasks))]


def _run_ray(ray, tasks: list[Task], tick) -> list[TaskResult]:
    from ptxsim.distributed.ray_backend import remote
    # a task whose worker process died (Ray's memory monitor kills one when the node runs low)
    # runs once more; a task's own errors never retry (run_task returns them as rows)
    fn = remote(ray, run_task, num_cpus=1, max_retries=1)
    futures = {fn.remote(t, i): i for i, t in enumerate(tasks)}
    results: dict[int, TaskResult] = {}
    pending = list(futures)
    while pending:
        done, pending = ray.wait(pending, num_returns=min(len(pending), 16), timeout=0.5)
        for f in done:
            i = futures[f]
            try:
                results[i] = ray.get(f)
            except Exception as exc:   # noqa: BLE001 - the Ray task died: a failed row
                t = tasks[i]
                results[i] = TaskResult(i, t.name or f"task{i}", t.kernel or "", dict(t.shape),
                                        t.target, dict(t.options), "failed", "WorkerError",
                                        f"the Ray task ended without a result: "
                                        f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            tick(results[i])
    return [results[i] for i in range(len(tasks))]


# ---------------------------------------------------------------------------------------------
# specs
# ---------------------------------------------------------------------------------------------
KERNEL_KEYS = {"name", "file", "ptx", "kernel", "grid", "block", "cluster", "args",
               "dynamic_shared", "shapes", "targets", "target", "sanitize", "options", "seed",
               "step_limit", "max_resident_ctas"}
TOP_KEYS = {"workers", "defaults", "kernels"}


def load_spec(path) -> dict:
    """A farm spec from a JSON (.json) or TOML (.toml) file."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FarmSpecError(f"farm spec '{path}': cannot read ({exc.strerror})") from None
    try:
        if path.suffix == ".toml":
            import tomllib
            spec = tomllib.loads(raw.decode())
        else:
            spec = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FarmSpecError(f"farm spec '{path}': not valid "
                            f"{'TOML' if path.suffix == '.toml' else 'JSON'}: {exc}") from None
    if not isinstance(spec, dict):
        raise FarmSpecError(f"farm spec '{path}': the top level must be a table / object")
    spec.setdefault("_source", str(path))
    return spec


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def _eval(expr: str, names: dict, where: str) -> int:
    """An integer expression over the shape's names: + - * // % **, parentheses, integers."""
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise FarmSpecError(f"{where}: '{node.id}' is not a name of the shape "
                                    f"({', '.join(names) or 'none'})")
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        raise FarmSpecError(f"{where}: '{expr}' is not an integer expression (names, integers, "
                            "+ - * // % **)")
    try:
        return int(ev(ast.parse(expr, mode="eval")))
    except SyntaxError:
        raise FarmSpecError(f"{where}: '{expr}' is not an expression") from None
    except ZeroDivisionError:
        raise FarmSpecError(f"{where}: '{expr}' divides by zero") from None


def _subst(text: str, names: dict, where: str) -> str:
    """'{expr}' fields of a string replaced by their integer values."""
    out, i = [], 0
    while True:
        j = text.find("{", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        k = text.find("}", j)
        if k < 0:
            raise FarmSpecError(f"{where}: unclosed '{{' in '{text}'")
        out.append(text[i:j])
        out.append(str(_eval(text[j + 1:k], names, where)))
        i = k + 1


def _dims(v, names, where):
    if v is None:
        return None
    if isinstance(v, (list, tuple)):
        return tuple(_dims(x, names, where) for x in v)
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise FarmSpecError(f"{where}: expected an integer, an expression string or a list "
                            f"of them, got {v!r}")
    return v if isinstance(v, int) else _eval(_subst(v, names, where), names, where)


def _arg(a, shape, where, base: Path):
    if not isinstance(a, str):
        return a
    a = _subst(a, shape, where)
    return str(Path(base, a)) if a.endswith(".npy") else a


def expand_spec(spec: dict, base: Path) -> list[Task]:
    """The tasks of a spec: for each kernel entry, shapes x targets x sanitize modes x option
    sets. Paths are relative to the spec's folder."""
    src = spec.get("_source", "farm spec")
    for k in spec:
        if k not in TOP_KEYS and k != "_source":
            raise FarmSpecError(f"{src}: unknown key '{k}' (known: {', '.join(sorted(TOP_KEYS))})")
    kernels = spec.get("kernels")
    if not isinstance(kernels, list) or not kernels:
        raise FarmSpecError(f"{src}: 'kernels' must be a non-empty list of kernel tables")
    defaults = spec.get("defaults", {})
    if not isinstance(defaults, dict):
        raise FarmSpecError(f"{src}: 'defaults' must be a table")
    tasks = []
    for ki, entry in enumerate(kernels):
        where = f"{src}: kernels[{ki}]"
        if not isinstance(entry, dict):
            raise FarmSpecError(f"{where}: must be a table / object")
        e = {**defaults, **entry}
        for k in e:
            if k not in KERNEL_KEYS:
                raise FarmSpecError(f"{where}: unknown key '{k}' (known: "
                                    f"{', '.join(sorted(KERNEL_KEYS))})")
        if ("file" in e) == ("ptx" in e):
            raise FarmSpecError(f"{where}: give exactly one of 'file' (a PTX file) or 'ptx' "
                                "(PTX text)")
        ptx = e["ptx"] if "ptx" in e else Path(base, e["file"])
        if "file" in e and not Path(ptx).is_file():
            raise FarmSpecError(f"{where}.file: '{e['file']}' is not a file (paths are relative "
                                f"to the spec's folder {base})")
        shapes = e.get("shapes", [{}])
        targets = e.get("targets", [e.get("target", "sm_100a")])
        modes = e.get("sanitize")
        option_sets = e.get("options", [{}])
        for key, v in (("shapes", shapes), ("targets", targets), ("options", option_sets)):
            if not isinstance(v, list) or not v:
                raise FarmSpecError(f"{where}.{key}: must be a non-empty list")
        if isinstance(option_sets, list) and not all(isinstance(o, dict) for o in option_sets):
            raise FarmSpecError(f"{where}.options: each entry must be a table of launch options")
        base_opts = {k: e[k] for k in ("step_limit", "max_resident_ctas") if k in e}
        modes = [None] if modes is None else (modes if isinstance(modes, list) else [modes])
        args = e.get("args", [])
        if not isinstance(args, list):
            raise FarmSpecError(f"{where}.args: must be a list of argument specs")
        # the inputs depend on the shape only: every target / mode / option set of a shape
        # gets the same arrays, so their outputs compare
        for (si, shape), target, mode, opts in product(enumerate(shapes), targets, modes,
                                                       option_sets):
            if not isinstance(shape, dict) or not all(isinstance(v, int) for v in shape.values()):
                raise FarmSpecError(f"{where}.shapes: each shape must be a table of integers")
            w = f"{where} (shape {shape})"
            options = {**base_opts, **opts}
            if mode is not None:
                options["sanitize"] = mode
            name = e.get("name") or e.get("kernel") or Path(str(e.get("file", "ptx"))).stem
            tasks.append(Task(
                ptx=ptx, kernel=e.get("kernel"), grid=_dims(e.get("grid", 1), shape, w + ".grid"),
                block=_dims(e.get("block", 32), shape, w + ".block"),
                cluster=_dims(e.get("cluster"), shape, w + ".cluster"),
                args=[_arg(a, shape, w + ".args", base) for a in args],
                target=target, dynamic_shared=_dims(e.get("dynamic_shared", 0), shape,
                                                    w + ".dynamic_shared"),
                options=options, name=name, shape=dict(shape), seed=int(e.get("seed", 0)) + si))
    return tasks
