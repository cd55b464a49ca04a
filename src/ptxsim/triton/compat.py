"""For programs written for a GPU that ask `torch.cuda` about the device (Triton's tutorials and
unit tests: `torch.cuda.get_device_capability()`, `get_device_properties(...)`): with CPU torch
there is no CUDA device to ask, so while `torch_cuda_answers()` is active these two answer for
ptxsim's target (B200 for sm_100a, ...). Opt-in; nothing else of torch.cuda changes
(`torch.cuda.is_available()` stays False)."""
from __future__ import annotations

import contextlib
import types

from ptxsim.triton._state import STATE


def _capability(device=None):
    a = STATE.device().arch
    return a // 10, a % 10


def _properties(device=None):
    d = STATE.device()
    return types.SimpleNamespace(name=f"ptxsim {d.name} ({d.product})", major=d.arch // 10,
                                 minor=d.arch % 10, multi_processor_count=d.multiprocessor_count,
                                 total_memory=192 << 30, warp_size=d.warp_size)


@contextlib.contextmanager
def torch_cuda_answers():
    """Within the block, torch.cuda.get_device_capability / get_device_properties answer for
    the target ptxsim runs Triton launches on."""
    import torch
    saved = torch.cuda.get_device_capability, torch.cuda.get_device_properties
    torch.cuda.get_device_capability, torch.cuda.get_device_properties = _capability, _properties
    try:
        yield
    finally:
        cuda = getattr(torch, "cuda", None)      # None while the interpreter shuts down
        if cuda is not None:
            cuda.get_device_capability, cuda.get_device_properties = saved
