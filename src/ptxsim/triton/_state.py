"""What the Triton front door remembers between calls: the selected target, the device each
target appears as, and the launches it made. Imports Triton only inside ptxsim_active (the
backend modules that Triton's entry-point discovery loads read this at `import triton` time)."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Device:
    """The device a target stands for; get_device_properties answers from it.

    max_shared_mem: the largest shared memory one CTA may use (CUDA C++ Programming Guide,
    "Technical Specifications per Compute Capability": 227 KB for 9.0 and 10.x, 99 KB for 12.0).
    multiprocessor_count: of the product named (B200 148, B300 148, RTX 5090 170, H100 SXM 132);
    kernels that size a persistent grid from it get that many programs.
    """
    name: str
    arch: int                 # GPUTarget.arch (compute capability as an integer)
    product: str
    multiprocessor_count: int
    max_shared_mem: int
    max_num_regs: int = 65536
    warp_size: int = 32
    sm_clock_rate: int = 1_965_000       # kHz; only reported (nothing here is timed)
    mem_clock_rate: int = 3_996_000
    mem_bus_width: int = 8192


DEVICES = {
    "sm_100a": Device("sm_100a", 100, "B200", 148, 232448),
    "sm_103a": Device("sm_103a", 103, "B300", 148, 232448),
    "sm_120a": Device("sm_120a", 120, "RTX 5090", 170, 101376),
    "sm_90a": Device("sm_90a", 90, "H100 SXM", 132, 232448),
}
DEFAULT_TARGET = "sm_100a"
# device ordinals the targets appear as (Triton caches compiled kernels per device, so each
# target is its own device); far from a real GPU's ordinal
DEVICE_BASE = 1000
ORDINALS = {name: DEVICE_BASE + i for i, name in enumerate(DEVICES)}
BY_ORDINAL = {v: k for k, v in ORDINALS.items()}
SANITIZE_MODES = ("default", "full", "none")


class FindingWarning(UserWarning):
    """A Triton launch on ptxsim in which the sanitizer found an error (a race, an asynchronous
    operation read before it completed, ...; docs/sanitizer.md): the kernel may compute the
    right numbers on a GPU by timing alone. The message lists each error finding with its PTX
    line and Triton source line; `last_launch().findings` has them all (warnings included)."""


class State:
    def __init__(self):
        self.target: str | None = None   # set by use(); None: the default target when active
        self.selected = False            # use() was called (ptxsim runs even beside a GPU)
        self.launches: deque = deque(maxlen=8)   # the last launches (ptxsim.triton.launches)
        self.steps = 0                   # warp-instruction steps of every launch (autotune)
        self.sanitize = "default"        # the sanitizer's mode (use(sanitize=...))

    def device(self) -> Device:
        return DEVICES[self.target or DEFAULT_TARGET]


STATE = State()


def ptxsim_active() -> bool:
    """Whether Triton's active driver is ptxsim's (without creating a driver)."""
    from triton.runtime import driver as _drv
    d = getattr(_drv, "_active", None) or getattr(_drv, "_default", None)
    return bool(getattr(d, "is_ptxsim", False))
