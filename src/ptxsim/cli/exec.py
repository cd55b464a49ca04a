"""`ptxsim exec PROGRAM [ARGS...]`: run an unmodified CUDA program (built by nvcc with
`-cudart shared` and PTX for the device, e.g. `-gencode arch=compute_100a,code=compute_100a`)
with ptxsim as its GPU. ptxsim's stand-ins for libcudart.so.13 and libcuda.so.1 are put in
front of NVIDIA's (LD_LIBRARY_PATH), so every CUDA call of the program runs on ptxsim's driver
model in the program's own process; its host threads and memory stay its own. After the program
exits, a report says where each kernel ran, what faulted (with the PTX line) and which CUDA
calls ptxsim does not model, and the sanitizer's findings of each launch (docs/sanitizer.md).
The exit status is the program's (with --fail-on-findings: 1 when the program exited 0 but the
sanitizer reported an error)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ptxsim.errors import OperandError

SUFFIX = "run with ptxsim exec (docs/cudacpp.md)"


def register(subparsers) -> None:
    p = subparsers.add_parser("exec", help="run an nvcc-built CUDA program on ptxsim",
                              description=__doc__,
                              formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("--device", default=None, help="the device(s) the program sees: b200 "
                   "(default), b300, rtx5090, or a comma-separated list")
    p.add_argument("--step-limit", type=int, default=None,
                   help="warp-instruction steps one launch may take before it is stopped")
    p.add_argument("--report", default=None, help="also write the report as JSON lines here")
    p.add_argument("--quiet", "-q", action="store_true", help="no report on stderr")
    p.add_argument("--sanitize", choices=("none", "default", "full"), default="default",
                   help="the sanitizer's checks of every launch (docs/sanitizer.md)")
    p.add_argument("--fail-on-findings", action="store_true",
                   help="exit with status 1 when the sanitizer reports an error and the "
                        "program exited 0")
    p.add_argument("program", metavar="PROGRAM")
    p.add_argument("args", nargs=__import__("argparse").REMAINDER, metavar="ARGS")
    p.set_defaults(func=run)


def check_program(path: str) -> str:
    """The program's path, after checking that ptxsim can run it (named errors otherwise)."""
    from ptxsim.cuda import fatbin
    prog = Path(path)
    if not prog.exists():
        import shutil
        found = shutil.which(path)
        if found is None:
            raise OperandError(f"PROGRAM {path}: no such file")
        prog = Path(found)
    if not os.access(prog, os.X_OK) or prog.is_dir():
        raise OperandError(f"PROGRAM {path}: not an executable file")
    data = prog.read_bytes()
    try:
        needed = fatbin.elf_needed(data)
        blob = fatbin.elf_section(data, ".nv_fatbin")
    except fatbin.FatbinError:
        return str(prog.absolute())             # a script or another format: just run it
    cudart = [n for n in needed if n.startswith("libcudart.so")]
    if cudart and cudart[0] != "libcudart.so.13":
        raise OperandError(f"PROGRAM {path} is linked against {cudart[0]}; ptxsim provides "
                           "the CUDA 13 runtime (libcudart.so.13): rebuild it with nvcc 13")
    if blob is not None and not cudart and "libcuda.so.1" not in needed:
        raise OperandError(f"PROGRAM {path} contains CUDA kernels but links the CUDA runtime "
                           "statically (nvcc's default), which ptxsim cannot stand in for: "
                           "rebuild it with nvcc -cudart shared")
    if blob is not None:
        try:
            ptx = fatbin.ptx_entries(blob)
        except fatbin.FatbinError as e:
            raise OperandError(f"PROGRAM {path}: its fat binary cannot be read ({e})") from None
        if not ptx:
            raise OperandError(f"PROGRAM {path} holds no PTX (its fat binary has "
                               f"{fatbin.describe(blob)}): ptxsim runs PTX, so rebuild it with "
                               "-gencode arch=compute_100a,code=compute_100a")
    return str(prog.absolute())


def environment(libdir: str, report: str, device: str | None, step_limit: int | None,
                sanitize: str | None = None) -> dict:
    """The program's environment: the stand-ins first on the library path, and what their
    embedded Python needs (this interpreter, the report file, options)."""
    from ptxsim import cuda
    paths = {"libcuda.so.1": cuda.native_path("cuda"),
             "libcudart.so.13": cuda.native_path("cudart")}
    missing = [k for k, v in paths.items() if v is None]
    if missing:
        raise OperandError("ptxsim's CUDA stand-ins were not built when ptxsim was installed "
                           f"({', '.join(missing)}): they need a C compiler and a Python with a "
                           "shared libpython on Linux; reinstall ptxsim where both are present")
    for name, target in paths.items():
        os.symlink(target, os.path.join(libdir, name))
        os.symlink(target, os.path.join(libdir, name.rsplit(".", 1)[0]))   # dlopen("libcuda.so")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join([libdir] + [p for p in env.get(
        "LD_LIBRARY_PATH", "").split(os.pathsep) if p])
    env["PTXSIM_PYTHON"] = sys.executable
    env["PTXSIM_EXEC_REPORT"] = report
    if device:
        env["PTXSIM_CUDA_DEVICES"] = device
    if step_limit:
        env["PTXSIM_STEP_LIMIT"] = str(step_limit)
    if sanitize:
        env["PTXSIM_SANITIZE"] = sanitize
    return env


def _short(name: str, n: int = 100) -> str:
    return name if len(name) <= n else name[:n - 3] + "..."


def summary(events: list[dict]) -> str:
    from ptxsim.cuda.shim import demangle
    launches = [e for e in events if e["event"] == "launch"]
    lines = []
    devices = sorted({f"{e['device']} ({e['target']})" for e in launches if e.get("device")})
    lines.append(f"ptxsim exec: {len(launches)} kernel launch{'es' if len(launches) != 1 else ''}"
                 + (f" on {', '.join(devices)}, simulated by ptxsim" if devices else ""))
    for e in launches:
        cl = f" cluster {tuple(e['cluster'])}" if e.get("cluster") else ""
        what = (f"ran, {e['steps']:,} scheduler steps" if e["result"] == "CUDA_SUCCESS"
                else e["result"])
        lines.append(f"  {_short(demangle(e['kernel']))}  grid {tuple(e['grid'])} block {tuple(e['block'])}"
                     f"{cl} shared {e['shared']} B: {what}")
        for w in e.get("warnings") or ():
            lines.append(f"    warning: {w[:300]}")
        f = e.get("finding")
        if f:
            lines.append(f"    {f['error']} at PTX line {f['ptx_line']} ({f['instruction']}), "
                         f"thread {tuple(f['tid'] or ())} of block {tuple(f['ctaid'] or ())}")
    findings = [e for e in launches if e.get("finding")]
    lines.append(f"  findings: {len(findings) or 'none'}")
    san = [f for e in launches for f in e.get("sanitizer") or ()]
    n_err = sum(f.get("severity") == "error" for f in san)
    lines.append(f"  sanitizer: {n_err} error(s), {len(san) - n_err} warning(s)"
                 + (" (below)" if san else ""))
    unmodelled = sorted({e["api"] for e in events if e["event"] == "unmodelled"})
    if unmodelled:
        lines.append(f"  not modelled (returned error 801): {', '.join(unmodelled)}")
    return "\n".join(lines)


def run(args) -> int:
    prog = check_program(args.program)
    with tempfile.TemporaryDirectory(prefix="ptxsim-exec-") as tmp:
        report = os.path.join(tmp, "report.jsonl")
        env = environment(tmp, report, args.device, args.step_limit, args.sanitize)
        try:
            rc = subprocess.run([prog] + list(args.args), env=env).returncode
        except OSError as e:
            raise OperandError(f"PROGRAM {args.program}: cannot run it ({e})") from None
        events = []
        if os.path.exists(report):
            with open(report) as f:
                events = [json.loads(line) for line in f if line.strip()]
        if args.report:
            with open(args.report, "w") as f:
                f.writelines(json.dumps(e) + "\n" for e in events)
    if not args.quiet:
        sys.stdout.flush()
        status = (f"exited with {rc}" if rc >= 0 else
                  f"was killed by {signal.Signals(-rc).name}")
        print(summary(events) + f"\n  {Path(prog).name} {status}", file=sys.stderr)
        sanitizer_report(events, sys.stderr)
    if rc == 0 and args.fail_on_findings and any(
            f.get("severity") == "error" for e in events if e["event"] == "launch"
            for f in e.get("sanitizer") or ()):
        return 1
    return rc if rc >= 0 else 128 - rc


def sanitizer_report(events: list[dict], file) -> None:
    """The sanitizer's findings of each launch (PTX file:line, kind, CTA / warp / lane)."""
    from ptxsim.cuda.shim import demangle
    from ptxsim.machine.sanitizer.findings import Finding, report_launch
    for e in events:
        if e["event"] == "launch" and e.get("sanitizer"):
            report_launch(_short(demangle(e["kernel"])),
                          [Finding.from_dict(d) for d in e["sanitizer"]], file)
