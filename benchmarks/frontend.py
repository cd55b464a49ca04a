"""Front-end speed: `ptxsim check` (parse_module + validate + the executor-coverage pass) against
ptxas on the same files, in the same run, in MB of PTX per second.

    PYTHONPATH=src python benchmarks/frontend.py [--lines 480000] [--repeat 3] [--no-ptxas]
                                                 [--out DIR] [FILE.ptx ...]

Inputs:
  * every PTX file of the repository (Triton, CuTe DSL, nvcc, hand-written kernels), one by one,
    in this process (parse + validate);
  * a large module (default 480,000 lines) made of the repository's Triton and CuTe kernels, each
    copy with its kernel renamed and its virtual registers renumbered (so that operands do not
    repeat between copies, as in one huge kernel); kept in --out (default
    /work/cache/frontend-bench, outside the repository);
  * CUTLASS's examples/77_blackwell_fmha compiled by nvcc for sm_100a (the large real input of
    issue #20: 398k lines, 11.7 MB with nvcc 13.0), when scripts/build_fmha_ptx.sh has built it
    ($PTXSIM_FMHA_PTX, default /work/cache/frontend/77_blackwell_fmha.ptx); skipped with the
    reason otherwise. It is built outside the repository and never committed;
  * the PTX files named on the command line and in $PTXSIM_FRONTEND_FILES (separated by ':'),
    when they exist.

The large inputs are each checked in a fresh process, `--repeat` times (median reported): what
`ptxsim check FILE` costs from the start of the interpreter (imports included), its phases, and
its peak memory above the process's size once the text is read, per MB of PTX.

Times: wall clock and CPU time (time.process_time; for child processes, their user + system
time), because the machine running the suite is shared; the load average is printed with them.
ptxas: $PTXAS, else the nvidia-cu13 wheel's, else `ptxas` on PATH; -arch=sm_100a.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FMHA = Path(os.environ.get("PTXSIM_FMHA_PTX", "/work/cache/frontend/77_blackwell_fmha.ptx"))
WHEEL_PTXAS = "/work/venv/lib/python3.11/site-packages/nvidia/cu13/bin/ptxas"


def find_ptxas():
    for p in (os.environ.get("PTXAS"), WHEEL_PTXAS, shutil.which("ptxas")):
        if p and Path(p).exists():
            return p
    return None


def big_module(lines: int) -> str:
    """Kernels of the repository replicated into one module of about `lines` lines."""
    sources = sorted(ROOT.glob("tests/data/ptx/triton/*.ptx")) + sorted(ROOT.glob("tests/data/ptx/cute/*.ptx"))
    kernels = []
    for p in sources:
        text = p.read_text()
        if ".debug" in text or ".extern .func" in text:
            continue
        head, sep, body = text.partition(".visible .entry")
        if sep:
            kernels.append((head, sep + body))
    header = ".version 9.0\n.target sm_100a\n.address_size 64\n"
    out, n, copy = [header], header.count("\n"), 0
    # module-level declarations of each source once
    for head, _ in kernels:
        decls = "\n".join(ln for ln in head.splitlines()
                          if ln.strip().startswith((".extern .shared", ".global", ".shared", ".const")))
        out.append(decls + "\n")
    while n < lines:
        head, body = kernels[copy % len(kernels)]
        name = re.search(r"\.entry\s+(\w+)", body).group(1)
        shift = 1000 * (copy // len(kernels))
        b = body.replace(name, f"{name}_c{copy}")
        # renumber virtual registers (%r12 -> %r1012) so copies do not share operands, and
        # widen the declarations to match
        b = re.sub(r"(%(?:rd|rs|r|f|fd|p|h|hh|q))(\d+)\b", lambda m: f"{m.group(1)}{int(m.group(2)) + shift}", b)
        b = re.sub(r"(\.reg\s+\.\w+\s+%\w+)<(\d+)>", lambda m: f"{m.group(1)}<{int(m.group(2)) + shift}>", b)
        b = re.sub(r"\$L__(\w+)", lambda m: f"$L__{m.group(1)}_c{copy}", b)
        out.append(b)
        n += b.count("\n")
        copy += 1
    return "".join(out)


def _clock():
    return time.perf_counter(), time.process_time()


def check(text: str, name: str):
    from ptxsim.ptx import errors_of, parse_module, validate
    t0, c0 = _clock()
    m = parse_module(text, name)
    t1, c1 = _clock()
    errs = errors_of(validate(m))
    t2, c2 = _clock()
    return dict(parse_wall=t1 - t0, check_wall=t2 - t1, wall=t2 - t0, cpu=c2 - c0,
                parse_cpu=c1 - c0, errors=len(errs))


def child(path: str) -> None:
    """What `ptxsim check PATH` does, phase by phase (one JSON line on stdout)."""
    t0, c0 = _clock()
    from ptxsim.cli._inputs import read_text
    from ptxsim.machine.coverage import unexecutable
    from ptxsim.ptx import errors_of, parse_module, validate
    t1, c1 = _clock()
    text = read_text(path, "FILE.ptx")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t2, c2 = _clock()
    m = parse_module(text, path)
    t3, c3 = _clock()
    rss_parse = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    diags = validate(m)
    t4, c4 = _clock()
    errs = errors_of(diags)
    gaps = [] if errs else unexecutable(m)
    t5, c5 = _clock()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(dict(
        bytes=len(text.encode()), lines=text.count("\n"), errors=len(errs), gaps=len(gaps),
        instructions=sum(len(f.instructions) for f in m.functions if f.body is not None),
        import_wall=t1 - t0, parse_wall=t3 - t2, parse_cpu=c3 - c2, validate_wall=t4 - t3,
        validate_cpu=c4 - c3, coverage_wall=t5 - t4, coverage_cpu=c5 - c4,
        rss_text_mb=rss0 / 1024, peak_parse_mb=(rss_parse - rss0) / 1024,
        peak_mb=(rss1 - rss0) / 1024)))


def run_child(path: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True,
                       text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"check of {path} failed:\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["wall"] = wall
    r["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r


def ptxas(path: Path, exe: str):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([exe, "-arch=sm_100a", str(path), "-o", os.devnull], capture_output=True,
                       text=True)
    t1 = time.perf_counter()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dict(wall=t1 - t0, cpu=cpu, ok=p.returncode == 0)


def large(path: Path, repeat: int, exe: str | None) -> None:
    runs = [run_child(path) for _ in range(repeat)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if isinstance(runs[0][k], float)}
    r0 = runs[0]
    mb = r0["bytes"] / 1e6
    print(f"{path.name}: {r0['lines']} lines, {mb:.1f} MB, {r0['instructions']} instructions, "
          f"{r0['errors']} errors, {r0['gaps']} coverage warnings; median of {repeat}, load "
          f"{os.getloadavg()[0]:.1f}")
    print(f"  ptxsim check (whole process): {med['wall']:.1f} s wall ({mb / med['wall']:.2f} MB/s), "
          f"{med['cpu']:.1f} s CPU ({mb / med['cpu']:.2f} MB/s); runs: "
          + ", ".join(f"{r['wall']:.1f}/{r['cpu']:.1f}" for r in runs) + " s wall/CPU")
    print(f"  phases (wall/CPU s): parse {med['parse_wall']:.2f}/{med['parse_cpu']:.2f}, validate "
          f"{med['validate_wall']:.2f}/{med['validate_cpu']:.2f}, coverage "
          f"{med['coverage_wall']:.2f}/{med['coverage_cpu']:.2f}, imports {med['import_wall']:.2f}; "
          f"parse + validate {mb / (med['parse_cpu'] + med['validate_cpu']):.2f} MB/s CPU")
    print(f"  peak memory above the read text: +{med['peak_mb']:.0f} MB "
          f"({med['peak_mb'] / mb:.1f} MB per MB; after parsing +{med['peak_parse_mb']:.0f} MB)")
    if exe:
        q = ptxas(path, exe)
        print(f"  ptxas -arch=sm_100a, same file: {q['wall']:.1f} s wall ({mb / q['wall']:.2f} MB/s), "
              f"{q['cpu']:.1f} s CPU ({mb / q['cpu']:.2f} MB/s), {'accepted' if q['ok'] else 'refused'}; "
              f"ptxsim / ptxas CPU time: {med['cpu'] / q['cpu']:.2f}")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.path.insert(0, str(ROOT / "src"))
        child(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*", help="more PTX files to measure (also $PTXSIM_FRONTEND_FILES)")
    ap.add_argument("--lines", type=int, default=480_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ptxas", action="store_true")
    ap.add_argument("--no-repo", action="store_true", help="skip the repository's files and the "
                    "synthetic module")
    ap.add_argument("--out", default="/work/cache/frontend-bench")
    ap.add_argument("--no-fmha", action="store_true", help="skip the CUTLASS FMHA module")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    exe = None if args.no_ptxas else find_ptxas()
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())}, "
          f"{os.cpu_count()} CPUs")
    extra = [Path(p) for p in args.files]
    extra += [Path(p) for p in os.environ.get("PTXSIM_FRONTEND_FILES", "").split(os.pathsep) if p]
    if not args.no_repo:
        files = sorted(ROOT.glob("tests/**/*.ptx")) + sorted(ROOT.glob("src/ptxsim/data/kernels/*.ptx"))
        total = sum(p.stat().st_size for p in files)
        ours = {"wall": 0.0, "cpu": 0.0}
        same = {"wall": 0.0, "cpu": 0.0}          # ptxsim on the files ptxas is timed on
        theirs = {"wall": 0.0, "cpu": 0.0}
        for p in files:
            r = check(p.read_text(), str(p))
            ours["wall"] += r["wall"]
            ours["cpu"] += r["cpu"]
            if exe and p.parent.name in ("triton", "cute"):
                same["wall"] += r["wall"]
                same["cpu"] += r["cpu"]
                q = ptxas(p, exe)
                theirs["wall"] += q["wall"]
                theirs["cpu"] += q["cpu"]
        mb = total / 1e6
        print(f"repository PTX: {len(files)} files, {mb:.2f} MB: ptxsim parse + validate "
              f"{mb / ours['wall']:.2f} MB/s wall, {mb / ours['cpu']:.2f} MB/s CPU")
        if exe:
            tc = sum(p.stat().st_size for p in files if p.parent.name in ("triton", "cute")) / 1e6
            print(f"  the Triton/CuTe files ({tc:.2f} MB): ptxsim {tc / same['wall']:.2f} MB/s wall, "
                  f"{tc / same['cpu']:.2f} MB/s CPU; ptxas -arch=sm_100a "
                  f"{tc / theirs['wall']:.2f} MB/s wall, {tc / theirs['cpu']:.2f} MB/s CPU")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        big = out / f"big_{args.lines}.ptx"
        if not big.exists():
            big.write_text(big_module(args.lines))
        large(big, args.repeat, exe)
    if not args.no_fmha:
        if FMHA.is_file():
            large(FMHA, args.repeat, exe)
        else:
            print(f"{FMHA.name}: skipped, {FMHA} not found (build it with "
                  "scripts/build_fmha_ptx.sh, or set PTXSIM_FMHA_PTX)")
    for p in extra:
        if not p.is_file():
            print(f"{p}: not found, skipped")
            continue
        large(p, args.repeat, exe)
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
