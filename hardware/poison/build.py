"""Here (no GPU): assemble the poison probes and the Triton kernels, stage the device folder.

    PTXSIM_UPSTREAM_CACHE=... python hardware/poison/build.py /work/main/.device/poison

probe_<tag>.cubin: kernels.module() assembled for sm_90a by every ptxas at hand (tag = version and
-O level): 12.9 (the `ptxas` Triton 3.9 ships for sm < 90), 13.0 (/usr/local/bin, also -O0), 13.4
(Triton 3.9's `ptxas-blackwell`, which it uses for sm_90+), 13.5 (the project's pin).
<kernel>.cubin: the Triton 3.9.0 sm_90a PTX of poison_triton.py assembled by ptxas 13.4 (what
Triton 3.9 itself runs for sm_90a); the PTX is also written to tests/data/ptx/triton/poison/
(the replay test runs it on ptxsim). manifest.json: what poison_capture.py launches.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import poison_kernels as kernels  # noqa: E402
import poison_triton as triton_kernels  # noqa: E402

SITE = Path("/work/venv/lib/python3.11/site-packages")
PTXAS = {
    "ptxas12.9": SITE / "triton/backends/nvidia/bin/ptxas",
    "ptxas13.0": Path("/usr/local/bin/ptxas"),
    "ptxas13.4": SITE / "triton/backends/nvidia/bin/ptxas-blackwell",
    "ptxas13.5": SITE / "nvidia/cu13/bin/ptxas",
}
PROBES = [("ptxas12.9", "-O3"), ("ptxas13.0", "-O3"), ("ptxas13.0", "-O0"), ("ptxas13.4", "-O3"),
          ("ptxas13.5", "-O3")]
PTX_DIR = ROOT / "tests" / "data" / "ptx" / "triton" / "poison"


def version(exe: Path) -> str:
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1]


def assemble(exe: Path, ptx: Path, out: Path, opt: str = "-O3") -> None:
    subprocess.run([str(exe), "-arch=sm_90a", opt, str(ptx), "-o", str(out)], check=True)


def main(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    man = {"probes": [], "triton": [], "ptxas": {k: version(v) for k, v in PTXAS.items()}}
    probe = dest / "probes.ptx"
    probe.write_text(kernels.module())
    for tool, opt in PROBES:
        tag = f"{tool}{opt}"
        assemble(PTXAS[tool], probe, dest / f"probe_{tag}.cubin", opt)
        man["probes"].append(tag)
    np.save(dest / "division_inputs.npy", kernels.division_inputs())
    np.save(dest / "triton_tile_inputs.npy", kernels.triton_tile_inputs())
    man["division_names"] = kernels.division_names()
    man["wild"] = [int(w) for w in kernels.WILD]
    PTX_DIR.mkdir(parents=True, exist_ok=True)
    seen = {}
    for k in triton_kernels.compile_all("sm_90a", dest / "triton_src"):
        ptx = k.pop("ptx")
        digest = hashlib.sha256(ptx.encode()).hexdigest()
        k["ptx_sha256"] = digest
        if digest in seen:                  # DISALLOW_ACC_MULTI_BUFFER changes nothing on sm_90a
            k["same_as"] = seen[digest]
        else:
            seen[digest] = k["name"]
            (PTX_DIR / f"{k['name']}.ptx").write_text(ptx)
            (dest / f"{k['name']}.ptx").write_text(ptx)
            assemble(PTXAS["ptxas13.4"], dest / f"{k['name']}.ptx", dest / f"{k['name']}.cubin")
        man["triton"].append(k)
    shutil.rmtree(dest / "triton_src", ignore_errors=True)
    (dest / "manifest.json").write_text(json.dumps(man, indent=1))
    for f in ("poison_capture.py", "poison_kernels.py"):
        shutil.copy(HERE / f, dest / f)
    print(json.dumps(man["ptxas"], indent=1), len(man["triton"]), "triton kernels")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
