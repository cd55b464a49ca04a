"""Device side of the matrix captures (mma.sync sweep, wgmma, ldmatrix / stmatrix / movmatrix):
run every kernel of a staged build, twice with differently poisoned outputs, record the outputs.

    python3 runner.py run STAGE_DIR OUT_DIR
    python3 runner.py worker STAGE_DIR NAMES_FILE RESULT_DIR          (internal)

STAGE_DIR/manifest.json lists items {name, family, cubin, grid, block, in_words, out_words};
STAGE_DIR/<family>_in.npz holds each item's input words (uint32, 1-D). Every kernel takes
(.param .u64 in, .param .u64 out). Workers are subprocesses: a faulting kernel kills its CUDA
context, the orchestrator records the fault and restarts on the rest (as hardware/base_sweep).
Writes OUT_DIR/<family>_out.npz (each item's first run), status.json, meta.json, log.txt.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

POISON = (0xDEADBEEF, 0x5A5A5A5A)


def worker(stage: Path, names_file: Path, res: Path) -> None:
    import cupy as cp
    man = json.loads((stage / "manifest.json").read_text())
    items = {it["name"]: it for it in man["items"]}
    mods, inputs = {}, {}
    progress = res / "progress"
    for name in names_file.read_text().split():
        it = items[name]
        fam = it["family"]
        if fam not in inputs:
            inputs[fam] = np.load(stage / f"{fam}_in.npz")
        if it["cubin"] not in mods:
            mods[it["cubin"]] = cp.RawModule(path=str(stage / it["cubin"]))
        fn = mods[it["cubin"]].get_function(name)
        d_in = cp.asarray(inputs[fam][name].astype(np.uint32))
        progress.write_text(name)
        outs = []
        for p in POISON:
            d_out = cp.full(it["out_words"], p, dtype=cp.uint32)
            fn(tuple(it["grid"]), tuple(it["block"]), (d_in, d_out))
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


def orchestrate(stage: Path, out: Path) -> None:
    res = Path("/tmp/matrix_results")
    res.mkdir(parents=True, exist_ok=True)
    log = open(out / "log.txt", "w", buffering=1)
    meta = dict(date_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                gpu=sh("nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader"),
                cupy=sh(f"{sys.executable} -c 'import cupy; print(cupy.__version__)'"),
                build=json.loads((stage / "manifest.json").read_text())["build"])
    log.write(json.dumps(meta) + "\n")
    items = json.loads((stage / "manifest.json").read_text())["items"]
    status = {}
    remaining = [it["name"] for it in items]
    t0 = time.time()
    while remaining:
        nf = res / "names"
        nf.write_text("\n".join(remaining))
        (res / "progress").write_text("")
        t = time.time()
        p = subprocess.run([sys.executable, __file__, "worker", str(stage), str(nf), str(res)],
                           capture_output=True, text=True, timeout=400)
        cur = (res / "progress").read_text().strip()
        log.write(f"worker rc={p.returncode} {len(remaining)} names {time.time() - t:.1f}s cur={cur}\n")
        done = set()
        for n in remaining:
            if (res / f"{n}.npy").exists():
                done.add(n)
                u = res / f"{n}.unstable"
                status[n] = "unstable: " + u.read_text() if u.exists() else "ok"
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
    fams = {}
    for it in items:
        f = res / f"{it['name']}.npy"
        if f.exists():
            fams.setdefault(it["family"], {})[it["name"]] = np.load(f)
    for fam, arrays in fams.items():
        np.savez_compressed(out / f"{fam}_out.npz", **arrays)
    (out / "status.json").write_text(json.dumps(status, indent=0))
    bad = {n: s for n, s in status.items() if s != "ok"}
    log.write(f"{sum(map(len, fams.values()))} captured, not ok: {json.dumps(bad)[:3000]}\n")
    (out / "meta.json").write_text(json.dumps(meta, indent=1))
    log.close()


if __name__ == "__main__":
    if sys.argv[1] == "worker":
        worker(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
    else:
        orchestrate(Path(sys.argv[2]), Path(sys.argv[3]))
