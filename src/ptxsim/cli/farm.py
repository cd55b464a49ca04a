"""`ptxsim farm SPEC`: run many independent launches (kernel files x shapes x targets x modes)
described by a JSON or TOML spec, in worker processes or on Ray, and print one table of results
and findings (and write it as JSON). A failed task is a row; it never stops the others. Exit
status 0 when every task passed, 1 otherwise. Spec format: docs/distributed.md."""
from __future__ import annotations

import sys
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("farm", help="run many launches from a JSON / TOML spec",
                              description=__doc__.split(":", 1)[1].strip())
    p.add_argument("spec", metavar="SPEC", help="farm spec (.json or .toml)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", "-j", default=None,
                   help="worker processes on this machine (default: the spec's, else one per "
                        "core; 1: one after the other in this process)")
    g.add_argument("--ray", metavar="ADDRESS", default=None,
                   help="run as Ray tasks: 'local' starts a Ray on this machine, 'auto' joins "
                        "the cluster `ray start` made here, HOST:PORT or ray://HOST:PORT another")
    p.add_argument("--json", metavar="FILE", default=None, help="write the results as JSON")
    p.add_argument("--progress", action="store_true", default=None, help="show a progress bar")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.set_defaults(func=run)


def ray_workers(address: str) -> str:
    return "ray" if address in ("", "local") else f"ray:{address}"


def run(args) -> int:
    from rich.console import Console

    from ptxsim.distributed.farm import farm
    from ptxsim.errors import OperandError
    workers = None
    if args.ray is not None:
        workers = ray_workers(args.ray)
    elif args.workers is not None:
        try:
            workers = int(args.workers)
        except ValueError:
            raise OperandError(f"--workers {args.workers}: expected a number of processes") \
                from None
    if args.json:
        out = Path(args.json)
        if out.parent and not out.parent.is_dir():
            raise OperandError(f"--json {args.json}: folder '{out.parent}' does not exist")
    report = farm(args.spec, workers, progress=args.progress)
    Console(width=160).print(report.table())
    if args.json:
        Path(args.json).write_text(report.to_json())
        print(f"results: {args.json}", file=sys.stderr)
    return 0 if not report.failures else 1
