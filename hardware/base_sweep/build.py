"""Build the base-instruction sweep here (no GPU): enumerate forms, let ptxas prune, assemble.

    python hardware/base_sweep/build.py [OUTDIR]         (default /work/main/.device/base_sweep)

Writes OUTDIR/{base.cubin, base.json (forms + input checksums), legality.json, capture.py,
base_inputs.py, gen.py, build_info.json}. Inputs are regenerated on the device (too large to carry)
and checked against the checksums recorded here.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import base_inputs  # noqa: E402
from forms import all_forms  # noqa: E402
from ptxgen import assemble, kernel, legal_subset, module  # noqa: E402

ARCH = "sm_90a"


def build(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    fs = all_forms()
    ok, rej = legal_subset(fs, ARCH)
    by = {f["name"]: f for f in fs}
    (outdir / "legality.json").write_text(json.dumps(
        dict(candidates=len(fs), accepted=len(ok),
             rejected=[[by[n]["instruction"], m] for n, m in rej.items()]), indent=0))
    for f in ok:
        f["inputs_checksum"] = base_inputs.inputs_checksum(f)
    assemble(module([kernel(f) for f in ok], ARCH), ARCH, outdir / "base.cubin")
    (outdir / "base.json").write_text(json.dumps(dict(items=ok, threads=base_inputs.N), indent=0))
    for src in ("capture.py", "base_inputs.py"):
        shutil.copy(HERE / src, outdir / src)
    shutil.copy(HERE.parents[1] / "src" / "ptxsim" / "testing" / "gen.py", outdir / "gen.py")
    nv = subprocess.run(["ptxas", "--version"], capture_output=True, text=True).stdout.strip()
    (outdir / "build_info.json").write_text(json.dumps(dict(ptxas_build_host=nv, arch=ARCH)))
    print(f"{len(ok)} forms accepted by ptxas ({ARCH}), {len(rej)} rejected")


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/main/.device/base_sweep"))
