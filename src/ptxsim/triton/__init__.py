"""Triton's front door: `@triton.jit` kernels run unchanged on ptxsim, on CPU tensors.

    import ptxsim.triton
    ptxsim.triton.use("sm_100a")          # or "sm_103a", "sm_120a", "sm_90a"
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)     # x, y, out: CPU torch tensors
    rec = ptxsim.triton.last_launch()     # .ptx, .module, .launch, .findings, .rerun(), ...

Every launch is checked by ptxsim's sanitizer (docs/sanitizer.md; `use(..., sanitize="full")` or
"none" to change the mode): an error finding is a `FindingWarning` naming the kind, the PTX line
and the Triton source line (`warnings.simplefilter("error", FindingWarning)` makes it raise).

ptxsim ships a Triton backend (the `triton.backends` entry point `ptxsim`, package
`ptxsim.triton.backend`): a compiler that runs Triton's own NVIDIA passes up to PTX, and a driver
that launches the PTX on ptxsim. In a process with no GPU the driver is active by itself
(installing ptxsim is enough); beside a GPU, `use()` selects it and `use(None)` hands back.

This package imports no Triton at import time (the backend modules are loaded by `import triton`).
"""
from __future__ import annotations

from ptxsim.errors import KernelFault, OperandError
from ptxsim.triton._state import DEFAULT_TARGET, DEVICES, SANITIZE_MODES, STATE, FindingWarning

__all__ = ["use", "target", "launches", "last_launch", "KernelFault", "FindingWarning",
           "TARGETS"]

TARGETS = tuple(DEVICES)


def use(target: str | None = DEFAULT_TARGET, *, sanitize: str | None = None) -> None:
    """Run every following Triton launch on ptxsim for `target` (one of TARGETS); `None` hands
    back to the driver Triton would choose by itself. `sanitize`: the sanitizer's mode for the
    following launches, "default" (as when use() is never called), "full" or "none"
    (docs/sanitizer.md); left out, the mode stays as it was."""
    from triton.runtime import driver
    if sanitize is not None:
        if sanitize not in SANITIZE_MODES:
            raise OperandError(f"ptxsim.triton.use: sanitize={sanitize!r} is not one of "
                               f"{', '.join(SANITIZE_MODES)}")
        STATE.sanitize = sanitize
    if target is None:
        STATE.selected, STATE.target = False, None
        driver.reset_active()
        return
    if target not in DEVICES:
        raise OperandError(f"ptxsim.triton.use: target {target!r} is not one of "
                           f"{', '.join(DEVICES)}")
    from ptxsim.triton.backend.driver import PtxsimDriver
    STATE.selected, STATE.target = True, target
    if not isinstance(getattr(driver, "_active", None), PtxsimDriver):
        driver.set_active(PtxsimDriver())


def target() -> str:
    """The target Triton launches run for on ptxsim."""
    return STATE.device().name


def launches() -> list:
    """The last launches ptxsim ran for Triton (TritonLaunch records, oldest first; up to 8)."""
    return list(STATE.launches)


def last_launch():
    """The most recent TritonLaunch (PTX, parsed module, executor launch, rerun, run_command)."""
    if not STATE.launches:
        raise OperandError("no Triton kernel has been launched on ptxsim yet")
    return STATE.launches[-1]
