"""Stage the matrix captures for the device (one run records all three families), and pack what
comes back.

    python hardware/matrix/stage.py build STAGE          # here: kernels, cubins, inputs, manifest
    # device (carry STAGE): python3 STAGE/runner.py run STAGE $OUT, then the SASS:
    #   for c in STAGE/*.cubin; do echo "== $(basename $c)"; cuobjdump -sass $c |
    #     grep -E "Function|MMA|FFMA|FADD|FMUL|HADD|HFMA|F2FP|DFMA"; done | gzip > $OUT/sass.txt.gz
    python hardware/matrix/stage.py pack STAGE DEVICE_OUT   # -> tests/data/hardware/{mma_sync,wgmma,matrix}/

Families: hardware/mma_sync/sweep.py (every sm_90a dense mma.sync form), hardware/wgmma/build.py,
hardware/matrix/build.py (ldmatrix / stmatrix / movmatrix). The SASS of extra cubins built for
other targets (sass_targets below: the forms whose code ptxas expands) comes back too, so the
expansion each model follows is read, not guessed.
"""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT / "src")]
PTXAS = "/usr/local/bin/ptxas"
_ERR = re.compile(r"line (\d+); error\s*:\s*(.*)")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def prune(texts, items, arch, ptxas=PTXAS):
    """Indices of the kernels ptxas accepts (iteratively), and {name: first error} of the rest."""
    keep = list(range(len(texts)))
    rejected = {}
    for _ in range(10):
        head = f".version 8.7\n.target {arch}\n.address_size 64\n\n"
        spans, line, body = [], head.count("\n") + 1, []
        for i in keep:
            spans.append((i, line, line + texts[i].count("\n") + 1))
            body.append(texts[i])
            line += texts[i].count("\n") + 1
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "k.ptx"
            p.write_text(head + "\n".join(body))
            r = subprocess.run([ptxas, f"-arch={arch}", str(p), "-o", str(Path(d) / "k.cubin")],
                               capture_output=True, text=True)
        if r.returncode == 0:
            return keep, rejected
        bad = set()
        for m in _ERR.finditer(r.stderr):
            ln = int(m.group(1))
            for i, a, b in spans:
                if a <= ln < b:
                    bad.add(i)
                    rejected.setdefault(items[i]["name"], m.group(2).strip())
        if not bad:
            raise RuntimeError(r.stderr[-3000:])
        keep = [i for i in keep if i not in bad]
    raise RuntimeError("pruning did not converge")


sys.modules["ptxsim_stage_ptxas"] = type(sys)("ptxsim_stage_ptxas")
sys.modules["ptxsim_stage_ptxas"].prune = prune

FAMILIES = {"mma_sync": ROOT / "hardware" / "mma_sync" / "sweep.py",
            "wgmma": ROOT / "hardware" / "wgmma" / "build.py",
            "matrix": ROOT / "hardware" / "matrix" / "build.py"}


def sass_targets(stage: Path) -> list[str]:
    """Cubins of the expanded forms for other targets (their SASS is read on the device)."""
    from ptxsim.isa import mma_sync as ms
    sweep = _load(FAMILIES["mma_sync"], "mma_sync_sweep")
    out = []
    for arch in ("sm_80", "sm_89", "sm_100a", "sm_120a"):
        forms = [f for f in ms.forms(arch) if f.quad_pair or f.atype in ("e4m3", "e5m2", "f64")
                 and f.kind is None]
        texts = [sweep.kernel(f"x{i:03d}", f, sweep.instruction(f)) for i, f in enumerate(forms)]
        ptx = stage / f"expanded_{arch}.ptx"
        ptx.write_text(f".version 8.7\n.target {arch}\n.address_size 64\n\n" + "\n".join(texts))
        subprocess.run([PTXAS, f"-arch={arch}", str(ptx), "-o", str(ptx.with_suffix(".cubin"))],
                       check=True)
        (stage / f"expanded_{arch}.json").write_text(json.dumps([f.text for f in forms]))
        out.append(ptx.with_suffix(".cubin").name)
    return out


def build(stage: Path) -> None:
    stage.mkdir(parents=True, exist_ok=True)
    items = []
    for fam, path in FAMILIES.items():
        items += _load(path, f"{fam}_build").build(stage)
    ver = subprocess.run([PTXAS, "--version"], capture_output=True, text=True).stdout.split("\n")[-2]
    extra = sass_targets(stage)
    (stage / "manifest.json").write_text(json.dumps(dict(build=dict(ptxas=ver, extra=extra),
                                                         items=items)))
    shutil.copy(HERE / "runner.py", stage / "runner.py")
    print(f"{len(items)} items: " + ", ".join(f"{f} {sum(it['family'] == f for it in items)}"
                                                for f in FAMILIES))


def sass_summary(stage: Path, dev: Path) -> str:
    """From the device's SASS: the arithmetic lines of every sm_90a m8n8k4 / fp8 / f64 kernel,
    and per other target the opcode counts of each expanded form (what each model follows)."""
    import collections
    import gzip
    txt = gzip.decompress((dev / "sass.txt.gz").read_bytes()).decode()
    secs = re.split(r"^== (\S+)\n", txt, flags=re.M)
    man = json.loads((stage / "manifest.json").read_text())
    inst = {it["name"]: it["instruction"].split(" ")[0] for it in man["items"]}
    keep = re.compile(r"\b(HMMA|DMMA|QMMA|FFMA|FADD|FMUL|HADD2|F2FP|DFMA)[.A-Z0-9_]*")
    out = ["# SASS (cuobjdump 13.0 on the H200 machine) of the expanded mma.sync forms",
           "# made by hardware/matrix/stage.py pack from the capture run; see hardware/mma_sync",
           "# (the 2026-11-28 run filtered the SASS on the device without QMMA: an sm_89 /",
           "# sm_120a fp8 form listed with no opcode has no F2FP conversion and no HMMA, i.e. it",
           "# runs natively)"]
    for name, body in zip(secs[1::2], secs[2::2]):
        funcs = re.split(r"Function : (\S+)\n", body)
        if name == "mma_sync.cubin":
            for fn, fb in zip(funcs[1::2], funcs[2::2]):
                text = inst.get(fn, fn)
                if not any(k in text for k in ("m8n8k4", "e4m3", "e5m2", "f64")):
                    continue
                out.append(f"== sm_90a {text}")
                for line in fb.splitlines():
                    code = re.sub(r"/\*[^*]*\*/", "", line).strip()
                    if keep.search(code):
                        out.append("   " + code)
        elif name.startswith("expanded_"):
            arch = name[len("expanded_"):-len(".cubin")]
            forms = json.loads((stage / f"expanded_{arch}.json").read_text())
            for fn, fb in zip(funcs[1::2], funcs[2::2]):
                ops = collections.Counter(m.group(0) for m in keep.finditer(fb))
                out.append(f"== {arch} {forms[int(fn[1:])]}: " +
                           ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))
    return "\n".join(out) + "\n"


def pack(stage: Path, dev: Path) -> None:
    data = ROOT / "tests" / "data" / "hardware"
    for fam, path in FAMILIES.items():
        (data / fam).mkdir(parents=True, exist_ok=True)
    (data / "mma_sync" / "mma_sync_sweep_sass.txt").write_text(sass_summary(stage, dev))
    _load(FAMILIES["mma_sync"], "s").pack(stage, dev, data / "mma_sync" / "mma_sync_sweep_sm90.npz")
    _load(FAMILIES["wgmma"], "w").pack(stage, dev, data / "wgmma" / "wgmma_sm90.npz")
    _load(FAMILIES["matrix"], "m").pack(stage, dev, data / "matrix" / "matrix_sm90.npz")


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(Path(sys.argv[2]))
    else:
        pack(Path(sys.argv[2]), Path(sys.argv[3]))
