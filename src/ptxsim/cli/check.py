"""`ptxsim check FILE.ptx [--target T] [--ptx-version V]`: parse and validate a PTX module and
print compiler-style diagnostics (`file:line:col: error: ...`). Exit status 1 on any error.

A module without errors is also checked against the executor (machine/coverage.py): each valid
instruction ptxsim cannot run gets a warning with its line (`ptxsim launch` / `run` would stop
there), so "check passes" and "ptxsim runs it" differ only where a warning says so."""
from __future__ import annotations

import sys

from ptxsim.errors import PtxSyntaxError


def register(subparsers) -> None:
    p = subparsers.add_parser("check", help="parse and validate a PTX file like ptxas, with "
                              "file:line:col diagnostics")
    p.add_argument("files", nargs="+", metavar="FILE.ptx")
    p.add_argument("--target", help="GPU the PTX is meant for (e.g. sm_100a); defaults to the "
                   "module's .target")
    p.add_argument("--ptx-version", help="override the module's .version (e.g. 8.7)")
    p.add_argument("-W", "--no-warnings", action="store_true", help="print errors only")
    p.set_defaults(func=run)


def run(args) -> int:
    from ptxsim.cli._inputs import read_text
    from ptxsim.errors import InputError
    from ptxsim.machine.coverage import unexecutable
    from ptxsim.ptx import parse_module, validate

    status = 0
    for name in args.files:
        try:
            text = read_text(name, "FILE.ptx")
        except InputError as exc:
            print(f"{name}: error: {exc}", file=sys.stderr)
            status = 1
            continue
        try:
            module = parse_module(text, filename=name)
            diags = validate(module, target=args.target, ptx_version=args.ptx_version)
        except PtxSyntaxError as exc:          # syntax errors and malformed .target/.version
            if exc.file is None:
                exc = type(exc)(exc.message, exc.line, exc.col, name)
            print(str(exc), file=sys.stderr)
            status = 1
            continue
        for d in diags:
            if d.severity == "error":
                status = 1
            elif args.no_warnings:
                continue
            print(str(d), file=sys.stderr)
        if args.no_warnings or any(d.severity == "error" for d in diags):
            continue
        for g in unexecutable(module, target=args.target):
            print(f"{name}:{g.line}:{g.col}: warning: ptxsim cannot execute '{g.instruction}': "
                  f"{g.reason}", file=sys.stderr)
    return status
