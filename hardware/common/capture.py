"""Run the captured instructions on a GPU (CuPy) and record every output register.

    python3 capture.py run BUILD_DIR OUT_DIR [--limit N]     orchestrate (what the device runs)
    python3 capture.py worker BUILD_DIR WHICH NAMES_FILE RESULT_DIR      (internal)

The orchestrator runs workers as subprocesses: a kernel that faults (illegal instruction) kills the
CUDA context of its process, so the orchestrator records the fault for the kernel the worker was
running (progress file) and starts a new worker for the rest. Forms suspected to fault
(FACTS.md section 5: mma.sp m16n8k32 16-bit types with selector 2/3) run last, one process each.
Every kernel runs twice, the output buffer poisoned with two different patterns; a register that
differs between the runs is reported (unwritten output or non-determinism).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BLOCK = 128
POISON = (0xDEADBEEF, 0x5A5A5A5A)


def worker(build: Path, which: str, names_file: Path, result_dir: Path) -> None:
    import cupy as cp
    man = json.loads((build / f"{which}.json").read_text())
    items = {it["name"]: it for it in man["items"]}
    mod = cp.RawModule(path=str(build / f"{which}.cubin"))
    if (build / f"{which}_in.npy").exists():
        shared = np.load(build / f"{which}_in.npy")
        get_in = lambda name: shared
    else:
        z = np.load(build / "mma_in.npz")
        get_in = lambda name: z[name]
    progress = result_dir / f"progress_{which}"
    (result_dir / f"limits_{which}").write_text(json.dumps(dict(
        stack_size_limit=int(cp.cuda.runtime.deviceGetLimit(0)))))   # cudaLimitStackSize
    for name in names_file.read_text().split():
        it = items[name]
        inp = np.ascontiguousarray(get_in(name), dtype=np.uint32)
        n = inp.shape[1]
        d_in = cp.asarray(inp)
        fn = mod.get_function(name)
        outs = []
        progress.write_text(name)
        for p in POISON:
            d_out = cp.full((len(it["outputs"]), n), p, dtype=cp.uint32)
            fn((n // BLOCK,), (BLOCK,), (d_in, d_out, np.uint32(n)))
            cp.cuda.runtime.deviceSynchronize()
            outs.append(cp.asnumpy(d_out))
        if which.startswith("full"):
            # hash-only capture: 8 bytes of sha256 over the little-endian output words
            import hashlib
            digest = hashlib.sha256(np.ascontiguousarray(outs[0], dtype="<u4").tobytes()).digest()[:8]
            np.save(result_dir / f"{name}.npy", np.frombuffer(digest, dtype="<u8"))
        else:
            np.save(result_dir / f"{name}.npy", outs[0])
        if not np.array_equal(outs[0], outs[1]):
            (result_dir / f"{name}.unstable").write_text(
                f"{int((outs[0] != outs[1]).sum())} words differ between poisoned runs")
    progress.write_text("")


def sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"error: {e}"


def suspect(it: dict) -> bool:
    return it.get("suspect", False) or (it.get("shape") == "m16n8k32" and it.get("atype") in ("f16", "bf16")
            and it.get("selector", 0) >= 2)


def run_names(build: Path, which: str, names: list[str], res: Path, status: dict, log) -> None:
    remaining = list(names)
    while remaining:
        nf = res / f"names_{which}"
        nf.write_text("\n".join(remaining))
        (res / f"progress_{which}").write_text("")
        t = time.time()
        p = subprocess.run([sys.executable, __file__, "worker", str(build), which, str(nf), str(res)],
                           capture_output=True, text=True, timeout=400)
        cur = (res / f"progress_{which}").read_text().strip()
        log.write(f"worker {which} rc={p.returncode} {len(remaining)} names {time.time()-t:.1f}s cur={cur}\n")
        done = {n for n in remaining if (res / f"{n}.npy").exists()}
        for n in done:
            status[n] = "ok"
            u = res / f"{n}.unstable"
            if u.exists():
                status[n] = "unstable: " + u.read_text()
        if p.returncode != 0:
            errs = [ln for ln in p.stderr.splitlines() if "Error:" in ln or "Error" in ln.split(":")[0]]
            err = errs[0].strip() if errs else (p.stderr.strip().splitlines() or ["?"])[-1]
            log.write(p.stderr[-3000:] + "\n")
            if cur and cur not in done:
                status[cur] = "fault: " + err
                done.add(cur)
            elif not done:
                for n in remaining:
                    status[n] = "worker failed: " + err
                return
        remaining = [n for n in remaining if n not in done]


def orchestrate(build: Path, out: Path, limit: int | None) -> None:
    res = Path("/tmp/capture_results")
    res.mkdir(parents=True, exist_ok=True)
    log = open(out / "capture_log.txt", "w", buffering=1)
    meta = dict(
        date_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        gpu=sh("nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader"),
        nvcc_device=sh("nvcc --version | tail -2"),
        cupy=sh(f"{sys.executable} -c 'import cupy; print(cupy.__version__, cupy.cuda.runtime.runtimeGetVersion(), cupy.cuda.runtime.driverGetVersion())'"),
        build=json.loads((build / "build_info.json").read_text()),
    )
    log.write(json.dumps(meta) + "\n")
    whichs = [w for w in ("video", "mma", "stack") if (build / f"{w}.json").exists()]
    if "--only" in sys.argv:
        whichs = sys.argv[sys.argv.index("--only") + 1].split(",")
    for which in whichs:
        man = json.loads((build / f"{which}.json").read_text())
        items = man["items"][:limit] if limit else man["items"]
        if limit and which == "mma":   # keep one suspect in the sanity run
            items += [it for it in man["items"] if suspect(it)][:1]
        status: dict[str, str] = {}
        t = time.time()
        run_names(build, which, [it["name"] for it in items if not suspect(it)], res, status, log)
        for it in items:
            if suspect(it):
                run_names(build, which, [it["name"]], res, status, log)
        log.write(f"{which}: {len(items)} items in {time.time()-t:.1f}s\n")
        names = [it["name"] for it in items]
        arrays = {n: np.load(res / f"{n}.npy") for n in names if (res / f"{n}.npy").exists()}
        np.savez_compressed(out / f"{which}_out.npz", **arrays)
        lim = res / f"limits_{which}"
        if lim.exists():
            log.write(f"{which} limits: {lim.read_text()}\n")
        (out / f"{which}_status.json").write_text(json.dumps(status, indent=0))
        bad = {n: s for n, s in status.items() if s != "ok"}
        log.write(f"{which}: {len(arrays)} captured, not ok: {json.dumps(bad)[:3000]}\n")
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    log.close()


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4]), Path(sys.argv[5]))
    else:
        lim = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else None
        orchestrate(Path(sys.argv[2]), Path(sys.argv[3]), lim)
