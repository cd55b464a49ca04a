"""`ptxsim run FILE.ptx --kernel K --grid X[,Y,Z] --block X[,Y,Z] --arg SPEC ...`: launch one
kernel of a PTX file on the CPU. Array arguments come from .npy files or are generated; after
the run every array argument is written to --out (argN.npy) and summarised.

Argument specs, in the kernel's parameter order:
  FILE.npy                 a numpy array (global buffer, passed as its address)
  zeros:DTYPE:N[xM...]     a generated zero array, e.g. zeros:float32:1024 or zeros:uint16:128x64
  rand:DTYPE:N[xM...]      uniform random values in [0, 1) (integers: 0..99), seeded by --seed
  TYPE:VALUE               a scalar, TYPE one of i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64
  bytes:N                  N zero bytes (an aggregate .param such as a CuTe kernel object)
"""
from __future__ import annotations

import sys

import numpy as np

from ptxsim.argspec import SCALARS, parse_arg  # noqa: F401 (ptxsim.cli.run.parse_arg)
from ptxsim.cli._inputs import check_nonneg, dims, prepare_out, read_text, save_atomic


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a kernel of a PTX file on the CPU",
                              description=__doc__.split("\n\n", 1)[1],
                              formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE.ptx")
    p.add_argument("--kernel", "-k", help="entry name (default: the only .entry)")
    p.add_argument("--grid", default="1", help="CTAs: X[,Y,Z]")
    p.add_argument("--block", default="32", help="threads per CTA: X[,Y,Z]")
    p.add_argument("--cluster", default=None, help="CTAs per cluster: X[,Y,Z]")
    p.add_argument("--arg", "-a", action="append", default=[], metavar="SPEC")
    p.add_argument("--dynamic-shared", type=int, default=0, help="bytes of dynamic shared memory")
    p.add_argument("--target", default="sm_100a")
    p.add_argument("--out", default=None, help="directory for the arrays after the run (checked "
                   "before the run; files written atomically)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--step-limit", type=int, default=50_000_000)
    p.add_argument("--progress", action="store_true", help="show a progress bar")
    p.add_argument("--max-resident-ctas", type=int, default=None,
                   help="CTAs per wave (default: up to 148 and 16,384 threads)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", "-j", type=int, default=None,
                   help="split the grid's waves across N processes on this machine")
    g.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="split the grid's waves across a Ray cluster: 'local' starts one here, "
                        "'auto' joins the one `ray start` made, HOST:PORT / ray://HOST:PORT")
    p.add_argument("--allow-order-dependent", action="store_true",
                   help="with --workers / --ray: merge bytes two workers wrote differently in "
                        "launch order instead of refusing (MergeConflict)")
    p.add_argument("--sanitize", choices=("none", "default", "full"), default="default",
                   help="the sanitizer's checks (docs/sanitizer.md): default (on), full (also "
                        "the PTX ISA's tcgen05 fence patterns, global races, registers), none")
    p.add_argument("--json", action="store_true",
                   help="print the sanitizer's findings as JSON instead of a table")
    p.add_argument("--trace", metavar="OUT.json", default=None,
                   help="write a Chrome-trace / Perfetto timeline of the run")
    p.add_argument("--trace-ctas", default="0,1", metavar="N[,N...]",
                   help="CTAs (linear ids) the trace shows (default 0,1)")
    p.add_argument("--schedule", default=None, metavar="random:SEED",
                   help="scheduling of warps and asynchronous completions: 'random:SEED' picks "
                        "among runnable warps and pending operations pseudo-randomly")
    p.set_defaults(func=run)


def run(args) -> int:
    import time

    from ptxsim.api import launch
    from ptxsim.errors import InputError
    from ptxsim.machine.inputs import check_target
    from ptxsim.ptx import parse_module
    # everything the user gave is checked before the kernel runs
    text = read_text(args.file, "FILE.ptx")
    check_target(args.target, "--target")
    check_nonneg(args.seed, "--seed")
    if args.step_limit < 1:
        raise InputError(f"--step-limit {args.step_limit}: must be at least 1")
    if args.dynamic_shared < 0:
        raise InputError(f"--dynamic-shared {args.dynamic_shared}: must not be negative")
    if args.max_resident_ctas is not None and args.max_resident_ctas < 1:
        raise InputError(f"--max-resident-ctas {args.max_resident_ctas}: must be at least 1")
    if args.workers is not None and args.workers < 1:
        raise InputError(f"--workers {args.workers}: must be at least 1")
    try:
        trace_ctas = tuple(int(x) for x in args.trace_ctas.split(","))
    except ValueError:
        raise InputError(f"--trace-ctas {args.trace_ctas}: expected CTA numbers like 0,1") \
            from None
    grid, block = dims(args.grid, "--grid"), dims(args.block, "--block")
    cluster = dims(args.cluster, "--cluster")
    out = prepare_out(args.out)
    module = parse_module(text, filename=args.file)
    kernel = args.kernel
    kernels = [f.name for f in module.entries if f.body is not None]
    if kernel is None:
        if len(kernels) != 1:
            raise InputError(f"--kernel: choose one of the kernels of {args.file}: "
                             f"{', '.join(kernels) or '(none)'}")
        kernel = kernels[0]
    elif kernel not in kernels:
        raise InputError(f"--kernel {kernel}: not a kernel of {args.file} (kernels: "
                         f"{', '.join(kernels) or 'none'})")
    rng = np.random.default_rng(args.seed)
    values = [parse_arg(s, rng) for s in args.arg]
    t = time.perf_counter()
    workers = args.workers
    if args.ray is not None:
        workers = "ray" if args.ray in ("", "local") else f"ray:{args.ray}"
    extra = {"workers": workers, "allow_order_dependent": args.allow_order_dependent} \
        if workers is not None else {}
    run_ = launch(module, kernel, grid, block, cluster, values,
                  args.target, args.dynamic_shared, step_limit=args.step_limit,
                  progress=args.progress, sanitize=args.sanitize, trace=args.trace,
                  trace_ctas=trace_ctas, schedule=args.schedule,
                  max_resident_ctas=args.max_resident_ctas, **extra)
    dt = time.perf_counter() - t
    findings = run_.findings
    dist = getattr(run_, "distribution", None)
    split = f", {dist.workers} workers ({dist.backend})" if dist and dist.workers > 1 else ""
    if args.json:
        print(findings.to_json())
    else:
        print(f"{kernel}: grid {grid} block {block}: {dt:.2f} s, "
              f"{run_.steps} scheduler steps{split}, sanitizer {args.sanitize}: "
              f"{len(findings.errors)} error(s), {len(findings.warnings)} warning(s)")
        if len(findings):
            print_findings(findings)
    if args.trace:
        print(f"trace: {args.trace}", file=sys.stderr)
    for i, v in enumerate(values):
        if isinstance(v, np.ndarray) and v.ndim:
            desc = f"arg{i}: {v.dtype} {v.shape}"
            if v.dtype.kind in "fiu" and v.size:
                desc += f" sum={v.astype(np.float64).sum():.6g} first={v.ravel()[:4].tolist()}"
            if not args.json:
                print(desc)
            if out:
                save_atomic(out, f"arg{i}.npy", v)
    return 1 if findings.errors else 0


def print_findings(findings, file=None) -> None:
    """The findings as a rich table (plain text when rich cannot size a terminal)."""
    from rich.console import Console
    Console(file=file or sys.stdout, width=160).print(findings.table())
