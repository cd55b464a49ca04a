"""`ptxsim cute SCRIPT [ARGS...]` / `ptxsim cute -m MODULE [ARGS...]`: run an unmodified CuTe DSL
program (a script, or a module as `python -m` runs it: `-m pytest tests/...` runs a project's own
test suite) on the emulated device.

Its `cuda.bindings.driver` calls see ptxsim.cuda (a B200 by default), its `cute.compile`d
functions run on ptxsim, and the torch tensors it creates on "cuda" are CPU tensors the device
maps in place (docs/cuda.md, "ptxsim cute").
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys


def register(sub) -> None:
    p = sub.add_parser("cute", help="run a CuTe DSL script on the emulated CUDA device",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default=os.environ.get("PTXSIM_CUDA_DEVICES", "b200"),
                   help="the emulated device(s), comma-separated: b200 (default), b300, "
                        "rtx5090, h200")
    p.add_argument("--step-limit", type=int, default=None,
                   help="warp instructions one launch may run (default: ptxsim.launch's)")
    p.add_argument("--progress", action="store_true", help="a progress bar per launch")
    p.add_argument("--workers", "-j", type=int, default=None,
                   help="split each launch's waves over N worker processes (docs/distributed.md)")
    p.add_argument("--max-resident-ctas", type=int, default=None,
                   help="CTAs per wave (default: up to 148 and 16,384 threads)")
    p.add_argument("--sanitize", choices=("default", "full", "none"), default=None,
                   help="the sanitizer's checks on every launch (docs/sanitizer.md; default: "
                        "default). Findings are printed when the program ends; an error "
                        "finding makes the exit status 1")
    p.add_argument("--keep", metavar="DIR", default=None,
                   help="keep the PTX the DSL compiles in DIR (default: a temporary folder)")
    p.add_argument("-m", dest="module", metavar="MODULE ...", nargs=argparse.REMAINDER,
                   default=None, help="run MODULE as `python -m MODULE` would, with the "
                   "arguments that follow it (last option: -m pytest -x test_x.py)")
    p.add_argument("script", nargs="?", help="the CuTe DSL program (a .py file)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    p.set_defaults(func=run)


def run(args) -> int:
    from ptxsim.cuda import driver
    from ptxsim.errors import OperandError
    if args.module is None:
        if args.script is None:
            raise OperandError("ptxsim cute needs a script (ptxsim cute SCRIPT ARGS) or a module "
                               "(ptxsim cute -m MODULE ARGS)")
        if not os.path.isfile(args.script):
            raise OperandError(f"script '{args.script}' does not exist")
    else:
        import importlib.util
        if args.script is not None or not args.module:
            raise OperandError("ptxsim cute -m MODULE ARGS: -m and its module come last (after "
                               "ptxsim's own options), without a script")
        args.module, args.args = args.module[0], args.module[1:]
        try:
            found = importlib.util.find_spec(args.module)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise OperandError(f"-m {args.module}: no module named '{args.module}'")
    options = {}
    if args.step_limit:
        options["step_limit"] = args.step_limit
    if args.progress:
        options["progress"] = True
    if args.workers is not None:
        options["workers"] = args.workers
    if args.max_resident_ctas is not None:
        options["max_resident_ctas"] = args.max_resident_ctas
    if args.sanitize is not None:
        options["sanitize"] = args.sanitize
    driver.configure([d for d in args.device.split(",") if d], **options)
    from ptxsim.cuda import dsl, torch_cuda
    dsl.install(keep_dir=args.keep)
    try:
        torch_cuda.install()
    except ImportError:
        pass                                   # a script without torch
    code = _run_program(args)
    return _report_findings(code)


def _report_findings(code: int) -> int:
    """The sanitizer's findings of every launch the program made, printed to stderr (a table
    per kernel); an error finding turns a clean exit into 1, as `ptxsim run` does."""
    from ptxsim.cuda import driver
    found = driver.DRIVER.findings
    if not found:
        return code
    from ptxsim.cli.run import print_findings
    errors = sum(len(f.errors) for _, f in found)
    warnings = sum(len(f.warnings) for _, f in found)
    print(f"\nptxsim sanitizer: {errors} error(s), {warnings} warning(s) in {len(found)} of "
          f"{driver.DRIVER.launches} launch(es) (PTX lines of the PTX the DSL compiled: "
          "ptxsim cute --keep DIR keeps it)", file=sys.stderr)
    shown = set()
    for name, findings in found:
        key = (name, tuple((f.kind, f.line) for f in findings))
        if key in shown:
            continue
        shown.add(key)
        print(f"kernel {name}:", file=sys.stderr)
        print_findings(findings, file=sys.stderr)
    return 1 if errors and code == 0 else code


def _run_program(args) -> int:
    try:
        if args.module is not None:
            sys.argv = [args.module] + list(args.args)
            sys.path.insert(0, os.getcwd())
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            script = os.path.abspath(args.script)
            sys.argv = [script] + list(args.args)
            sys.path.insert(0, os.path.dirname(script))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Exception as e:                          # noqa: BLE001 - the script's own failure
        import traceback
        traceback.print_exception(e)
        found = _ptxsim_cause(e)
        if found is not None:
            print(f"\nptxsim: {type(found).__name__}: {found}", file=sys.stderr)
        return 1
    return 0


def _ptxsim_cause(e: BaseException):
    """The CudaError (or other ptxsim error) behind a script's exception, if any: in its chain,
    or (a function compiled with --enable-tvm-ffi, whose CUDADialectError carries the text
    only) the runtime call's last CudaError when the exception quotes it."""
    from ptxsim.cuda import dsl
    from ptxsim.errors import PtxsimError
    seen, first = set(), e
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, PtxsimError):
            return e
        e = e.__cause__ or e.__context__
    last = getattr(dsl.LAST_ERROR, "error", None)
    if last is not None and str(last) in str(first):
        return last
    return None
