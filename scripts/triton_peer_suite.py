"""Run a documented subset of Triton's own language unit tests through ptxsim (sm_100a) and report
pass / fail / skip counts with the reason of each failure class.

    python scripts/triton_peer_suite.py [--out DIR] [--max-per-test N] [--target sm_100a]
                                        [--tests NAME ...] [--timeout S]

The test files come from the upstream cache (scripts/fetch_upstream.py triton). They run
unchanged under pytest with `--device cpu` (tensors are CPU tensors; ptxsim's memory is the
host's), ptxsim as Triton's driver, and `torch.cuda.get_device_capability` /
`get_device_properties` answering for the simulated target (ptxsim.triton.compat), since
Triton's test helpers ask torch about the GPU at import.

The subset (SUBSET below): test_core.py's dot, load / store and reduction tests and all of
test_matmul.py. Many tests are parametrised over thousands of cases; `--max-per-test N` keeps N
of each test's parametrisations, spread evenly over the collected list (deterministic), so a run
fits in CPU time; a case running longer than --case-timeout seconds fails as "timeout" (a size
ptxsim cannot simulate in that time, e.g. test_load_store_same_ptr's 1000 launches of 65,536 CTAs
of 1,024 threads). Results: DIR/results.json (every case: outcome, duration, first line of the
failure) and DIR/summary.md (counts and failure classes).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fetch_upstream import cache_dir  # noqa: E402

CORE = "python/test/unit/language/test_core.py"
MATMUL = "python/test/unit/language/test_matmul.py"
SUBSET = {
    CORE: [
        # dot
        "test_dot", "test_dot3d", "test_dot_mulbroadcasted", "test_dot_without_load",
        "test_dot_multidim", "test_scaled_dot", "test_dot_max_num_imprecise_acc",
        # load / store
        "test_masked_load", "test_masked_load_scalar", "test_masked_load_shared_memory",
        "test_load_store_same_ptr", "test_store_constant", "test_load_cache_modifier",
        "test_store_cache_modifier", "test_store_eviction_policy", "test_strided_load",
        "test_strided_store", "test_indirect_load", "test_indirect_store",
        "test_load_scalar_with_mask",
        # reductions
        "test_reduce1d", "test_reduce", "test_sum_dtype", "test_max_returns_zero",
        "test_max_min_with_nan", "test_argmax_argmin_with_nan", "test_scan2d", "test_scan_1d",
        "test_cumsum_dtype", "test_side_effectful_reduction_2d", "test_side_effectful_scan",
    ],
    MATMUL: None,             # every test of test_matmul.py
}

# The plugin pytest loads (written next to the copied tests): ptxsim as Triton's driver, the
# torch.cuda answers, one JSON line per finished case.
PLUGIN = '''
import json, os
import pytest

LOG = []
FOUND = {}          # case id -> the sanitizer's error findings (first line of each warning)
LIMIT = int(os.environ.get("PTXSIM_PEER_CASE_TIMEOUT", "300"))


class CaseTimeout(Exception):
    """the case ran longer than the per-case limit (ptxsim is a CPU simulator)"""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    import signal
    import warnings
    from ptxsim.triton import FindingWarning

    def alarm(signum, frame):
        raise CaseTimeout(f"Timeout: over {LIMIT} s on ptxsim (per-case limit)")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(LIMIT)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FindingWarning)
            outcome = yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    FOUND[item.nodeid] = [str(w.message).splitlines()[1][:300] for w in caught
                          if issubclass(w.category, FindingWarning)]
    # raised by the signal handler anywhere (even where a frame has no line number, which
    # pytest cannot format): report a fresh exception instead
    if isinstance(outcome.exception, CaseTimeout):
        outcome.force_exception(CaseTimeout(str(outcome.exception)))

def pytest_configure(config):
    import ptxsim.triton as pt
    from ptxsim.triton.compat import torch_cuda_answers
    pt.use(os.environ.get("PTXSIM_PEER_TARGET", "sm_100a"))
    answers = torch_cuda_answers()        # kept alive in LOG: closing it would undo it
    answers.__enter__()
    LOG.append(open(os.environ["PTXSIM_PEER_LOG"], "a"))
    LOG.append(answers)

def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return
    text = ""
    if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
        text = report.longrepr[2]
    elif report.longrepr is not None:
        crash = getattr(report.longrepr, "reprcrash", None)
        text = str(report.longrepr) if crash is None else crash.message + "\\n" + str(report.longrepr)[-1500:]
    LOG[0].write(json.dumps({"id": report.nodeid, "outcome": report.outcome, "when": report.when,
                             "seconds": report.duration, "message": text[:3000],
                             "findings": FOUND.get(report.nodeid, [])}) + "\\n")
    LOG[0].flush()
'''

# failure classes: (regex on the failure text, class name); first match wins
CLASSES = [
    (r"dense warp-level mma is not implemented", "needs dense mma.sync (issue #18)"),
    (r"no semantics for 'wgmma", "needs wgmma (issue #18)"),
    (r"not a tensor map \(ptxsim\.TensorMap image\)", "needs device-side tensor maps (issue #16)"),
    (r"packed tensor-map type", "needs packed 4-bit tensor-map types"),
    (r"PoisonValueError: (?:[^\n]*?: )?an? (\w+) of ([\w.:]+) is %\w+",
     "poison value used as the {0} of {1}"),
    (r"UndefinedBehavior: (rem|div)\.\w+: division by zero",
     "{0} by zero raised where the value may be unused (poison values not implemented)"),
    (r"cvt: (cvt\.\S+) does not exist", "conversion not modelled: {0}"),
    (r"ptxsim has no semantics for '([^']+)'", "instruction not modelled: {0}"),
    (r"KernelFault.*?(\w+Error): ([^\n]{0,80})", "ptxsim {0}: {1}"),
    (r"Torch not compiled with CUDA enabled|torch\.cuda|cuda", "test calls torch.cuda"),
    (r"Mismatched elements|not close|assert_close|AssertionError", "wrong result (check)"),
    (r"ptxas", "ptxas"),
    (r"Timeout|timed out", "timeout"),
]


# failures the same PTX has on a GPU (the case id, what must be in the message, the class):
# not ptxsim's, with the test that shows it
AS_ON_GPU = [
    (case, "Mismatched elements",
     "fails on the H200 too: Triton 3.9.0's tl.cumsum adds bfloat16 in bfloat16 (add.bf16), this "
     "test (Triton main) expects float32 accumulation; the H200 gives ptxsim's bits "
     "(tests/machine/test_poison_hw.py::"
     "test_scan2d_bf16_cumsum_is_the_h200s_and_fails_the_upstream_check_there_too)")
    for case in ("test_scan2d[cumsum-bfloat16-shape336-1-True-4]",      # (8, 32), axis 1,
                 "test_scan2d[cumsum-bfloat16-shape840-1-True-16]")     # reverse, 4 / 16 warps
]


def classify(message: str, case: str = "") -> str:
    for name, needle, cls in AS_ON_GPU:
        if case.endswith("::" + name) and needle in message:
            return cls
    for pattern, name in CLASSES:
        m = re.search(pattern, message, re.S)
        if m:
            return name.format(*m.groups())
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    return re.sub(r"0x[0-9a-f]+|\d+", "N", first)[:100]


def collect(root: Path, env: dict, path: str, names) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", path, "--device", "cpu", "-q",
                          "--collect-only", "-p", "no:cacheprovider", "-p", "ptxsim_peer"],
                         cwd=root, env=env, capture_output=True, text=True)
    ids = [line.strip() for line in out.stdout.splitlines() if "::" in line]
    if not ids:
        raise SystemExit(f"collection of {path} failed:\n{out.stdout[-3000:]}{out.stderr[-3000:]}")
    if names is None:
        return ids
    keep = set(names)
    return [i for i in ids if i.split("::")[1].split("[")[0] in keep]


def spread(ids: list[str], n: int) -> list[str]:
    """At most n of each test function's cases, evenly spaced over its collected list."""
    by_test = collections.defaultdict(list)
    for i in ids:
        by_test[i.split("[")[0]].append(i)
    out = []
    for cases in by_test.values():
        if len(cases) <= n:
            out += cases
        else:
            step = len(cases) / n
            out += [cases[int(k * step)] for k in range(n)]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="triton-peer-suite", help="directory for the results")
    ap.add_argument("--max-per-test", type=int, default=6)
    ap.add_argument("--target", default="sm_100a")
    ap.add_argument("--tests", nargs="*", help="only these test functions")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds for the whole run")
    ap.add_argument("--case-timeout", type=int, default=300, help="seconds for one case")
    args = ap.parse_args(argv)
    src = cache_dir("triton")
    if src is None:
        print("Triton's upstream files are not cached: python scripts/fetch_upstream.py triton",
              file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ptxsim-peer-"))
    shutil.copytree(src, work, dirs_exist_ok=True)
    (work / "ptxsim_peer.py").write_text(PLUGIN)
    log = out / "cases.jsonl"
    log.write_text("")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(work), os.environ.get("PYTHONPATH", "")]),
               PTXSIM_PEER_LOG=str(log), PTXSIM_PEER_TARGET=args.target,
               PTXSIM_PEER_CASE_TIMEOUT=str(args.case_timeout),
               TRITON_DEFAULT_FP_FUSION=os.environ.get("TRITON_DEFAULT_FP_FUSION", "1"))
    selected = []
    for path, names in SUBSET.items():
        if args.tests:
            names = [n for n in (names or args.tests) if n in args.tests]
        ids = collect(work, env, path, names)
        selected += spread(ids, args.max_per_test)
    print(f"{len(selected)} cases selected", flush=True)
    t0 = time.time()
    listing = work / "selected.txt"
    listing.write_text("\n".join(selected))
    try:
        subprocess.run([sys.executable, "-m", "pytest", *selected, "--device", "cpu", "-q",
                        "-p", "no:cacheprovider", "-p", "ptxsim_peer"],
                       cwd=work, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"stopped after {args.timeout} s", file=sys.stderr)
    wall = time.time() - t0
    cases = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    summarise(cases, selected, out, wall, src, args)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def summarise(cases, selected, out: Path, wall: float, src: Path, args) -> None:
    done = {c["id"]: c for c in cases}
    counts = collections.Counter(c["outcome"] for c in done.values())
    counts["not run"] = sum(1 for i in selected if i not in done)
    fails = collections.defaultdict(list)
    skips = collections.defaultdict(list)
    per_test = collections.defaultdict(collections.Counter)
    for c in done.values():
        per_test[c["id"].split("[")[0].split("::")[-1]][c["outcome"]] += 1
        if c["outcome"] == "failed":
            fails[classify(c["message"], c["id"])].append(c["id"])
        elif c["outcome"] == "skipped":
            skips[c["message"].strip().splitlines()[0][:100] if c["message"].strip()
                  else "(no reason)"].append(c["id"])
    manifest = json.loads((src / "manifest.json").read_text())
    (out / "results.json").write_text(json.dumps({
        "source": manifest, "target": args.target, "max_per_test": args.max_per_test,
        "wall_seconds": wall, "counts": counts, "cases": list(done.values())}, indent=1))
    lines = [f"# Triton peer suite on ptxsim ({args.target})", "",
             f"Source: {manifest.get('repo')} @ {manifest.get('ref')}; "
             f"{len(selected)} cases (at most {args.max_per_test} per test function); "
             f"{wall:.0f} s.", "",
             "| outcome | cases |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(counts.items())]
    lines += ["", "## Failure classes", "", "| class | cases | example |", "|---|---|---|"]
    for k, v in sorted(fails.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"| {k} | {len(v)} | `{v[0].split('::')[-1]}` |")
    found = {c["id"]: c["findings"] for c in done.values() if c.get("findings")}
    lines += ["", "## Sanitizer findings (default mode, errors)", "",
              f"{len(found)} case(s) with an error finding" + (":" if found else "."), ""]
    for k, v in sorted(found.items()):
        lines.append(f"- `{k.split('::')[-1]}`: " + "; ".join(f"`{x}`" for x in v[:3]))
    lines += ["", "## Skip reasons", "", "| reason | cases |", "|---|---|"]
    for k, v in sorted(skips.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"| {k.replace('|', '/')} | {len(v)} |")
    lines += ["", "## Per test function", "", "| test | passed | failed | skipped |",
              "|---|---|---|---|"]
    for k, v in sorted(per_test.items()):
        lines.append(f"| {k} | {v['passed']} | {v['failed']} | {v['skipped']} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
