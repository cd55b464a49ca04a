"""ptxsim's Triton compiler: Triton's own NVIDIA pipeline (ttir -> ttgir -> llir -> ptx, every
pass and option unchanged) for the selected target, then a last stage that hands the PTX to
ptxsim instead of ptxas. While ptxsim is the active driver it owns the "cuda" target; Triton's
NVIDIA compiler steps aside (see driver.py), so a compiled kernel is never mistaken for the
other's."""
from __future__ import annotations

import triton.backends.nvidia.compiler as _nv

from ptxsim.triton import _state


def ptxsim_active() -> bool:
    """Whether Triton's active driver is ptxsim's (without creating a driver)."""
    from triton.runtime import driver as _drv
    from ptxsim.triton.backend.driver import PtxsimDriver
    d = getattr(_drv, "_active", None) or getattr(_drv, "_default", None)
    return isinstance(d, PtxsimDriver)


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
        stages["ptxsim"] = lambda src, metadata: src.encode()

    def hash(self):
        # no ptxas runs: the key is ptxsim's version with the target, never the NVIDIA one's
        import ptxsim
        return f"ptxsim-{ptxsim.__version__}-{self.target.arch}"


__all__ = ["PtxsimBackend", "ptxsim_active", "_state"]
