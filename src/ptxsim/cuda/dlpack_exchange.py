"""torch's DLPack C exchange table (`torch.Tensor.__dlpack_c_exchange_api__`, dlpack.h
`DLPackExchangeAPI`) for tensors on the emulated device.

TVM-FFI (the calling convention of CuTe DSL functions compiled with `--enable-tvm-ffi`, as
FlashAttention-4's are) does not go through `Tensor.__dlpack__`: it reads this C table and calls
its function pointers. `capsule()` builds a table whose entries call torch's own and then give a
tensor on "cuda" the device (kDLCUDA, 0), as a CUDA build of torch would:

- managed_tensor_from_py_object_no_sync / dltensor_from_py_object_no_sync: torch's DLPack view of
  the tensor (host memory ptxsim maps), with the device rewritten;
- managed_tensor_to_py_object_no_sync / managed_tensor_allocator: a (kDLCUDA, 0) tensor becomes a
  CPU torch tensor on "cuda" (torch's CPU build cannot make CUDA tensors);
- current_work_stream: the script's current stream on the emulated device (`torch.cuda`).
"""
from __future__ import annotations

import ctypes

KDLCPU, KDLCUDA = 1, 2
_P = ctypes.c_void_p


class _Api(ctypes.Structure):                      # DLPackExchangeAPI (dlpack.h 1.x)
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev_api", _P),
                ("managed_tensor_allocator", _P), ("managed_tensor_from_py_object_no_sync", _P),
                ("managed_tensor_to_py_object_no_sync", _P),
                ("dltensor_from_py_object_no_sync", _P), ("current_work_stream", _P)]


_ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, _P, _P, _P, _P)
_FROM_PY = ctypes.CFUNCTYPE(ctypes.c_int, _P, _P)
_TO_PY = ctypes.CFUNCTYPE(ctypes.c_int, _P, _P)
_STREAM = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int32, _P)

# DLManagedTensorVersioned: version (8), manager_ctx, deleter, flags, then the DLTensor, whose
# device {int32 device_type, int32 device_id} follows its data pointer
_DLTENSOR_IN_VERSIONED = 32
_KEEP: list = []                                  # tables, callbacks and names stay alive


def _device_at(dltensor: int) -> ctypes.c_int32:
    return ctypes.c_int32.from_address(dltensor + 8)


def _set_device(dltensor: int, device_type: int, device_id: int = 0) -> None:
    _device_at(dltensor).value = device_type
    ctypes.c_int32.from_address(dltensor + 12).value = device_id


def capsule(torch_capsule, on_device, stream, mark):
    """A "dlpack_exchange_api" capsule over torch's table `torch_capsule`: on_device(tensor)
    says whether a tensor is on "cuda", stream() is the current stream handle, mark(tensor)
    puts a tensor torch made on "cuda"."""
    api = ctypes.pythonapi
    api.PyCapsule_GetPointer.restype = _P
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_New.restype = ctypes.py_object
    api.PyCapsule_New.argtypes = [_P, _P, _P]
    base = _Api.from_address(api.PyCapsule_GetPointer(torch_capsule, b"dlpack_exchange_api"))
    t_alloc = _ALLOC(base.managed_tensor_allocator)
    t_from = _FROM_PY(base.managed_tensor_from_py_object_no_sync)
    t_to = _TO_PY(base.managed_tensor_to_py_object_no_sync)
    t_dl = _FROM_PY(base.dltensor_from_py_object_no_sync) if base.dltensor_from_py_object_no_sync \
        else None

    def obj(p):
        return ctypes.cast(p, ctypes.py_object).value

    @_FROM_PY
    def from_py(py_object, out):
        r = t_from(py_object, out)
        if r == 0 and on_device(obj(py_object)):
            managed = ctypes.c_void_p.from_address(out).value
            _set_device(managed + _DLTENSOR_IN_VERSIONED, KDLCUDA)
        return r

    @_FROM_PY
    def dl_from_py(py_object, out):
        r = t_dl(py_object, out)
        if r == 0 and on_device(obj(py_object)):
            _set_device(out, KDLCUDA)
        return r

    @_TO_PY
    def to_py(managed, out):
        dl = managed + _DLTENSOR_IN_VERSIONED
        cuda = _device_at(dl).value == KDLCUDA
        if cuda:
            _set_device(dl, KDLCPU)
        r = t_to(managed, out)
        if r == 0 and cuda:
            mark(obj(ctypes.c_void_p.from_address(out).value))
        return r

    @_ALLOC
    def alloc(prototype, out, error_ctx, set_error):
        cuda = _device_at(prototype).value == KDLCUDA
        if cuda:
            _set_device(prototype, KDLCPU)
        try:
            r = t_alloc(prototype, out, error_ctx, set_error)
        finally:
            if cuda:
                _set_device(prototype, KDLCUDA)
        if r == 0 and cuda:
            _set_device(ctypes.c_void_p.from_address(out).value + _DLTENSOR_IN_VERSIONED,
                        KDLCUDA)
        return r

    @_STREAM
    def work_stream(device_type, device_id, out):
        ctypes.c_void_p.from_address(out).value = stream() if device_type == KDLCUDA else None
        return 0

    table = _Api(base.major, base.minor, None, ctypes.cast(alloc, _P),
                 ctypes.cast(from_py, _P), ctypes.cast(to_py, _P),
                 ctypes.cast(dl_from_py, _P) if t_dl else None, ctypes.cast(work_stream, _P))
    name = ctypes.create_string_buffer(b"dlpack_exchange_api")
    _KEEP.extend([table, name, alloc, from_py, to_py, dl_from_py, work_stream,
                  t_alloc, t_from, t_to, t_dl, torch_capsule])
    return api.PyCapsule_New(ctypes.addressof(table), ctypes.addressof(name), None)
