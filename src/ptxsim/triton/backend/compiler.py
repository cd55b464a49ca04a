"""ptxsim's Triton compiler: Triton's own NVIDIA pipeline (ttir -> ttgir -> llir -> ptx, every
pass and option unchanged) for the selected target, then a last stage that hands the PTX to
ptxsim instead of ptxas. While ptxsim is the active driver it owns the "cuda" target; Triton's
NVIDIA compiler steps aside (see driver.py), so a compiled kernel is never mistaken for the
other's."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

import triton.backends.nvidia.compiler as _nv

from ptxsim.triton._binary import pack
from ptxsim.triton._state import ptxsim_active


class PtxsimBackend(_nv.CUDABackend):
    """CUDABackend up to PTX; the binary is the PTX text itself (the `ptxsim` stage)."""

    @staticmethod
    def supports_target(target) -> bool:
        return target.backend == "cuda" and ptxsim_active()

    def __init__(self, target) -> None:
        super().__init__(target)
        self.binary_ext = "ptxsim"

    def add_stages(self, stages, options, language):
        super().add_stages(stages, options, language)
        stages.pop("cubin", None)
        stages["ptxsim"] = lambda src, metadata: pack(src, ptxas_info(src, self.target.arch))

    def hash(self):
        # Triton's cache key for this backend's output: ptxsim's version, this file and the
        # binary's format (_binary.py), the target; never the NVIDIA backend's key
        import hashlib

        import ptxsim
        from ptxsim.triton import _binary
        h = hashlib.sha256()
        for f in (__file__, _binary.__file__):
            with open(f, "rb") as src:
                h.update(src.read())
        digest = h.hexdigest()[:16]
        return f"ptxsim-{ptxsim.__version__}-{digest}-{self.target.arch}"


_USED = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes spill stores")


def ptxas_info(ptx: str, arch: int) -> dict:
    """Registers and spills of the kernel as the ptxas Triton ships reports them (`ptxas -v`):
    what the CUDA driver gives Triton as n_regs / n_spills on a GPU (the 02 softmax tutorial
    sizes its grid from it). ptxas rejecting the PTX raises PTXASError, as on a GPU. Without
    ptxas (or PTXSIM_TRITON_PTXAS=0) the counts are unknown: {}."""
    if os.environ.get("PTXSIM_TRITON_PTXAS", "1") in ("0", "off", "no"):
        return {}
    try:
        exe = _nv.get_ptxas(arch).path
    except Exception:                              # noqa: BLE001 - no ptxas: counts unknown
        return {}
    if not exe or not os.path.exists(exe):
        return {}
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        cmd = [exe, "-v", f"--gpu-name={_nv.sm_arch_from_capability(arch)}", src, "-o",
               os.path.join(d, "k.o")]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        from triton.runtime.errors import PTXASError
        raise PTXASError(f"ptxas rejected the kernel's PTX (as it would on a GPU):\n{r.stderr}")
    used, spill = _USED.search(r.stderr), _SPILL.search(r.stderr)
    return {"n_regs": int(used[1]) if used else None,
            "n_spills": int(spill[1]) if spill else 0, "ptxas": os.path.basename(exe)}


__all__ = ["PtxsimBackend", "ptxas_info"]
