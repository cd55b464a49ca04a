"""`ptxsim` command line.

Each sub-command lives in its own module of this package and defines
`register(subparsers) -> None`, adding an argparse parser whose `func(args) -> int` runs it.
Modules are discovered automatically, so adding a command never touches this file.
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from ptxsim import __version__
from ptxsim.errors import PtxsimError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ptxsim",
        description="Bit-exact CPU execution of Blackwell tcgen05, mma.sp and PTX "
                    "stack/video/misc instructions.")
    parser.add_argument("--version", action="version", version=f"ptxsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(module, "register"):
            module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except PtxsimError as exc:
        print(f"ptxsim: {type(exc).__name__}: {exc}", file=sys.stderr)
        found = getattr(exc, "findings", None)
        if found:                        # what the sanitizer found before the error
            print(f"the sanitizer found before the error:\n{found}", file=sys.stderr)
        return 1
    except MemoryError:
        print("ptxsim: out of memory", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ptxsim: interrupted", file=sys.stderr)
        return 130
