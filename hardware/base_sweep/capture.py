"""Run the base-instruction sweep on a GPU (CuPy), record every output row.

    python3 capture.py run BUILD_DIR OUT_DIR [--limit N]
    python3 capture.py worker BUILD_DIR NAMES_FILE RESULT_DIR        (internal)

Like hardware/common/capture.py: workers are subprocesses (a faulting kernel kills its CUDA context; the
orchestrator records it and restarts on the rest); each kernel runs twice with the output poisoned
by two patterns, and a difference is recorded as unstable. Inputs are regenerated here
(base_inputs.py) and must match the checksum recorded at build time.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
BLOCK = 128
POISON = (0xDEADBEEF, 0x5A5A5A5A)


def worker(build: Path, names_file: Path, res: Path) -> None:
    import cupy as cp
    import base_inputs as bi
    man = json.loads((build / "base.json").read_text())
    items = {it["name"]: it for it in man["items"]}
    mod = cp.RawModule(path=str(build / "base.cubin"))
    progress = res / "progress"
    outs_all = {}
    for name in names_file.read_text().split():
        it = items[name]
        inp = bi.device_rows(it, bi.operands(it))
        if bi.checksum(inp) != it["inputs_checksum"]:
            (res / f"{name}.badinput").write_text("input checksum differs from the build's")
            continue
        n = inp.shape[1]
        nout = sum(2 if it["regs"][o][0] == ".b64" else 1 for o in it["outputs"])
        d_in = cp.asarray(inp)
        fn = mod.get_function(name)
        progress.write_text(name)
        outs = []
        for p in POISON:
            d_out = cp.full((nout, n), p, dtype=cp.uint32)
            fn((n // BLOCK,), (BLOCK,), (d_in, d_out, np.uint32(n)))
            cp.cuda.runtime.deviceSynchronize()
            outs.append(cp.asnumpy(d_out))
        np.save(res / f"{name}.npy", outs[0])
        if not np.array_equal(outs[0], outs[1]):
            (res / f"{name}.unstable").write_text(f"{int((outs[0] != outs[1]).sum())} words differ")
    progress.write_text("")


def sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return f"error: {e}"


def orchestrate(build: Path, out: Path, limit) -> None:
    res = Path("/tmp/hw5_results")
    res.mkdir(parents=True, exist_ok=True)
    log = open(out / "capture_log.txt", "w", buffering=1)
    meta = dict(date_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                gpu=sh("nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader"),
                cupy=sh(f"{sys.executable} -c 'import cupy; print(cupy.__version__, "
                        "cupy.cuda.runtime.runtimeGetVersion(), cupy.cuda.runtime.driverGetVersion())'"),
                build=json.loads((build / "build_info.json").read_text()))
    log.write(json.dumps(meta) + "\n")
    items = json.loads((build / "base.json").read_text())["items"]
    items = items[:limit] if limit else items
    status = {}
    remaining = [it["name"] for it in items]
    t0 = time.time()
    while remaining:
        nf = res / "names"
        nf.write_text("\n".join(remaining))
        (res / "progress").write_text("")
        t = time.time()
        p = subprocess.run([sys.executable, __file__, "worker", str(build), str(nf), str(res)],
                           capture_output=True, text=True, timeout=500)
        cur = (res / "progress").read_text().strip()
        log.write(f"worker rc={p.returncode} {len(remaining)} names {time.time() - t:.1f}s cur={cur}\n")
        done = set()
        for n in remaining:
            if (res / f"{n}.npy").exists():
                done.add(n)
                u = res / f"{n}.unstable"
                status[n] = "unstable: " + u.read_text() if u.exists() else "ok"
            elif (res / f"{n}.badinput").exists():
                done.add(n)
                status[n] = "bad input checksum"
        if p.returncode != 0:
            log.write(p.stderr[-3000:] + "\n")
            if cur and cur not in done:
                status[cur] = "fault: " + (p.stderr.strip().splitlines() or ["?"])[-1]
                done.add(cur)
            elif not done:
                for n in remaining:
                    status[n] = "worker failed"
                break
        remaining = [n for n in remaining if n not in done]
    log.write(f"{len(items)} items in {time.time() - t0:.1f}s\n")
    arrays = {n: np.load(res / f"{n}.npy") for n in status if (res / f"{n}.npy").exists()}
    np.savez_compressed(out / "base_out.npz", **arrays)
    (out / "base_status.json").write_text(json.dumps(status, indent=0))
    bad = {n: s for n, s in status.items() if s != "ok"}
    log.write(f"{len(arrays)} captured, not ok: {json.dumps(bad)[:3000]}\n")
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    log.close()


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
    else:
        lim = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else None
        orchestrate(Path(sys.argv[2]), Path(sys.argv[3]), lim)
