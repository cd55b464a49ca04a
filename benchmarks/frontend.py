"""Front-end speed: `ptxsim check` (parse_module + validate) against ptxas on the same files, in
the same run, in MB of PTX per second.

    PYTHONPATH=src python benchmarks/frontend.py [--lines 480000] [--no-ptxas] [--out DIR]

Files:
  * every PTX file of the repository (Triton, CuTe DSL, nvcc, hand-written kernels), one by one;
  * a large module (default 480,000 lines, the size of CUTLASS's FMHA example module) made of
    the repository's Triton and CuTe kernels, each copy with its kernel renamed and its virtual
    registers renumbered (so that operands do not repeat between copies, as in one huge kernel);
    kept in --out (default /work/cache/frontend-bench, outside the repository).

Times: wall clock and CPU time of this process (time.process_time; for ptxas, the child's user +
system time), because the machine running the suite is shared. Peak memory: the growth of this
process's maximum resident set while the large module is checked, per MB of PTX.
ptxas: $PTXAS, else the nvidia-cu13 wheel's, else `ptxas` on PATH; -arch=sm_100a.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ptxsim.ptx import errors_of, parse_module, validate  # noqa: E402

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


def check(text: str, name: str):
    c0, t0 = time.process_time(), time.perf_counter()
    m = parse_module(text, name)
    c1, t1 = time.process_time(), time.perf_counter()
    errs = errors_of(validate(m))
    c2, t2 = time.process_time(), time.perf_counter()
    return dict(parse_wall=t1 - t0, check_wall=t2 - t1, wall=t2 - t0, cpu=c2 - c0,
                parse_cpu=c1 - c0, errors=len(errs))


def ptxas(path: Path, exe: str):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([exe, "-arch=sm_100a", str(path), "-o", os.devnull], capture_output=True,
                       text=True)
    t1 = time.perf_counter()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dict(wall=t1 - t0, cpu=cpu, ok=p.returncode == 0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=480_000)
    ap.add_argument("--no-ptxas", action="store_true")
    ap.add_argument("--out", default="/work/cache/frontend-bench")
    args = ap.parse_args()
    exe = None if args.no_ptxas else find_ptxas()
    files = sorted(ROOT.glob("tests/**/*.ptx")) + sorted(ROOT.glob("src/ptxsim/data/kernels/*.ptx"))
    total = sum(p.stat().st_size for p in files)
    ours = {"wall": 0.0, "cpu": 0.0}
    theirs = {"wall": 0.0, "cpu": 0.0}
    for p in files:
        r = check(p.read_text(), str(p))
        ours["wall"] += r["wall"]
        ours["cpu"] += r["cpu"]
        if exe and p.parent.name in ("triton", "cute"):
            q = ptxas(p, exe)
            theirs["wall"] += q["wall"]
            theirs["cpu"] += q["cpu"]
    mb = total / 1e6
    print(f"repository PTX: {len(files)} files, {mb:.2f} MB: ptxsim check {mb / ours['wall']:.2f} MB/s "
          f"wall, {mb / ours['cpu']:.2f} MB/s CPU")
    if exe:
        tc = sum(p.stat().st_size for p in files if p.parent.name in ("triton", "cute")) / 1e6
        print(f"  ptxas -arch=sm_100a on the Triton/CuTe files ({tc:.2f} MB): "
              f"{tc / theirs['wall']:.2f} MB/s wall, {tc / theirs['cpu']:.2f} MB/s CPU")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    big = out / f"big_{args.lines}.ptx"
    if not big.exists():
        big.write_text(big_module(args.lines))
    text = big.read_text()
    mb = len(text) / 1e6
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    r = check(text, str(big))
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"large module: {text.count(chr(10))} lines, {mb:.1f} MB, {r['errors']} errors: "
          f"parse {r['parse_wall']:.1f} s + check {r['check_wall']:.1f} s = {r['wall']:.1f} s wall "
          f"({mb / r['wall']:.2f} MB/s), {r['cpu']:.1f} s CPU ({mb / r['cpu']:.2f} MB/s); "
          f"peak memory +{(rss1 - rss0) / 1024:.0f} MB ({(rss1 - rss0) / 1024 / mb:.1f} MB per MB)")
    if exe:
        q = ptxas(big, exe)
        print(f"  ptxas -arch=sm_100a, same file: {q['wall']:.1f} s wall ({mb / q['wall']:.2f} MB/s), "
              f"{q['cpu']:.1f} s CPU ({mb / q['cpu']:.2f} MB/s), {'accepted' if q['ok'] else 'refused'}; "
              f"ptxsim / ptxas CPU time: {r['cpu'] / q['cpu']:.2f}")


if __name__ == "__main__":
    main()
