"""A Triton launch on ptxsim: the kernel arguments Triton hands its driver become the `.entry`
parameters of the PTX, and the kernel runs on `ptxsim.machine.executor`.

What the NVIDIA driver does (triton/backends/nvidia/driver.py and driver.c of Triton 3.9), done
here the same way:
- parameters: the kernel's signature with constexprs (and the arguments Triton specialised to
  constexpr, e.g. ints equal to 1) left out, tuples flattened, each host tensor descriptor
  expanded to a CUtensorMap (encoded like `fill_tma_descriptor_tiled`) followed by its shape and
  strides, then two pointers: the global scratch and the profile scratch;
- scalars packed like the driver's extractors: ints to their width, fp32 by C's double -> float
  conversion (round to nearest even), fp16 by PyFloat_Pack2 (round to nearest even), bf16 by
  truncating the f32 bits to the upper 16;
- geometry: grid (gridX * num_ctas, gridY, gridZ), block 32 * num_warps, cluster (num_ctas, 1, 1)
  when num_ctas > 1, dynamic shared memory = the kernel's `shared`;
- a grid with no programs launches nothing; the launch enter / exit hooks run around it.

The parameter list is checked against the `.entry` (count and byte size of every parameter); a
mismatch is an OperandError naming both, never a silent shift of arguments.
"""
from __future__ import annotations

import re
import struct
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ptxsim.errors import KernelFault, OperandError, PtxsimError
from ptxsim.triton import _host
from ptxsim.triton._state import STATE, FindingWarning

# CUtensorMapDataType codes Triton's device-side enum maps to (driver.py TMA_DTYPE_DEVICE_TO_HOST)
_TMA_DEVICE_TO_HOST = {i: i for i in range(16)}
_TMA_DEVICE_TO_HOST.update({8: 10, 9: 8, 10: 9})
_TMA_TF32 = 11
_INT_TYPES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u1": 1, "u8": 1, "u16": 2,
              "u32": 4, "u64": 8}


# ---------------------------------------------------------------------------------------------
# PTX -> source lines
# ---------------------------------------------------------------------------------------------
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s*,\s*\d+\s*,\s*\d+)?(?:\s+"([^"]*)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")


class SourceMap:
    """Which source line (file, line, column) each PTX line belongs to: the last `.loc` at or
    before it (PTX ISA 11.5 .loc, .file). Inside an inline-asm block (LLVM's `// begin inline
    asm` ... `// end inline asm`) the `.loc` before the block counts: LLVM numbers the asm's own
    lines on from it (Triton 3.9's unmasked load shows line + 1 there)."""

    def __init__(self, ptx: str):
        self.lines = ptx.splitlines()
        files, at, cur, in_asm = {}, [], None, False
        for text in self.lines:
            if "// begin inline asm" in text:
                in_asm = True
            elif "// end inline asm" in text:
                in_asm = False
            m = _LOC.match(text)
            if m:
                if not in_asm:
                    cur = (int(m[1]), int(m[2]), int(m[3]))
            else:
                f = _FILE.match(text)
                if f:
                    files[int(f[1])] = f[2] if not f[3] else f"{f[2]}/{f[3]}"
            at.append(cur)
        self.files, self.at = files, at

    def source(self, ptx_line: int):
        """(file, line, column) of PTX line `ptx_line` (1-based), or None."""
        if not 1 <= ptx_line <= len(self.at) or self.at[ptx_line - 1] is None:
            return None
        f, line, col = self.at[ptx_line - 1]
        return self.files.get(f, f"<file {f}>"), line, col

    def text(self, ptx_line: int) -> str:
        return self.lines[ptx_line - 1].strip() if 1 <= ptx_line <= len(self.lines) else ""


@dataclass
class LoadedKernel:
    """A compiled kernel as the driver holds it: name, PTX, the parsed module, its line map and
    what ptxas reported (n_regs, n_spills; empty without ptxas)."""
    name: str
    ptx: str
    module: object
    source_map: SourceMap
    ptxas: dict


def load_module(name: str, binary) -> LoadedKernel:
    from ptxsim.ptx import parse_module
    from ptxsim.triton._binary import unpack
    ptx, info = unpack(bytes(binary)) if isinstance(binary, (bytes, bytearray)) else (
        str(binary), {})
    return LoadedKernel(name, ptx, parse_module(ptx, filename=f"{name}.ptx"), SourceMap(ptx),
                        info)


# ---------------------------------------------------------------------------------------------
# the record of one launch
# ---------------------------------------------------------------------------------------------
@dataclass
class TritonLaunch:
    """One `kernel[grid](...)` as ptxsim ran it. `ptx`, `module` (parsed), `kernel` (entry name),
    `grid` / `block` / `cluster` / `dynamic_shared`, `target`, `params` (name, Triton type, value
    passed: host address, scalar bytes or TensorMap), `launch` (the executor's Launch: `.steps`,
    `.gmem`), `sanitize` (the sanitizer's mode it ran under), `findings` (what the sanitizer
    found: docs/sanitizer.md). `rerun()` runs it again on the same arguments; `run_command()`
    writes the files for `ptxsim run`."""
    kernel: str
    ptx: str
    module: object
    grid: tuple
    block: int
    cluster: tuple | None
    dynamic_shared: int
    target: str
    params: list
    objects: list = field(repr=False, default_factory=list)
    launch: object = field(repr=False, default=None)
    seconds: float = 0.0
    sanitize: str = "default"

    @property
    def findings(self):
        """The sanitizer's findings of the last run of this launch (empty with sanitize="none")."""
        from ptxsim.machine.sanitizer import Findings
        return self.launch.findings if self.launch is not None else Findings()

    def rerun(self):
        """Run the same launch again on the same arguments (their current contents)."""
        return _execute(self)

    def run_command(self, directory) -> list[str]:
        """Write kernel.ptx and one .npy per pointer argument (its bytes from the pointed address
        to the end of its buffer, as the launch left them... or now hold) into `directory`;
        return the `ptxsim run` command line that repeats the launch on them. A launch with
        tensor-map parameters cannot be written as `ptxsim run` arguments (OperandError)."""
        from pathlib import Path
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / "kernel.ptx").write_text(self.ptx)
        gmem = self.launch.gmem if self.launch is not None else None
        specs = []
        for i, (name, ty, value) in enumerate(self.params):
            if ty == "nvTmaDesc":
                raise OperandError(f"parameter {name}: a tensor map cannot be given to ptxsim "
                                   "run; use TritonLaunch.rerun()")
            if ty.startswith("*"):
                if not value:
                    specs.append("u64:0")
                    continue
                data = _bytes_from(value, gmem, self.objects)
                f = d / f"arg{i}.npy"
                np.save(f, data)
                specs.append(str(f))
            else:
                specs.append(_scalar_spec(ty, value))
        cmd = ["ptxsim", "run", str(d / "kernel.ptx"), "--kernel", self.kernel, "--grid",
               ",".join(map(str, self.grid)), "--block", str(self.block), "--target",
               self.target, "--dynamic-shared", str(self.dynamic_shared)]
        if self.cluster:
            cmd += ["--cluster", ",".join(map(str, self.cluster))]
        for s in specs:
            cmd += ["--arg", s]
        return cmd


def _bytes_from(address: int, gmem, objects) -> np.ndarray:
    for b in (gmem.buffers if gmem is not None else []):
        if b.base <= address < b.end:
            return b.u8[address - b.base:].copy()
    raise OperandError(f"address {address:#x} is in no buffer of the launch")


def _scalar_spec(ty: str, raw: bytes) -> str:
    if ty in ("fp16", "bf16"):
        return f"u16:{int.from_bytes(raw, 'little')}"
    if ty in ("fp32", "f32"):
        return f"u32:{int.from_bytes(raw, 'little')}"
    if ty == "fp64":
        return f"u64:{int.from_bytes(raw, 'little')}"
    size = _INT_TYPES[ty]
    return f"u{8 * size}:{int.from_bytes(raw, 'little')}"


# ---------------------------------------------------------------------------------------------
# arguments
# ---------------------------------------------------------------------------------------------
def _flatten(sig, arg, name, out):
    if isinstance(sig, tuple):
        for i, (s, a) in enumerate(zip(sig, arg)):
            _flatten(s, a, f"{name}[{i}]", out)
    elif sig != "constexpr":
        out.append((sig, arg, name))


def _scalar_bytes(ty: str, v) -> bytes:
    """A scalar as the NVIDIA driver's extractor packs it (driver.c extractI32 ... extractBF16)."""
    if ty in _INT_TYPES:
        n = _INT_TYPES[ty]
        if not isinstance(v, (bool, int, np.integer)):
            raise OperandError(f"an integer parameter ({ty}) got {type(v).__name__} {v!r}")
        v = int(v)
        size = 4 if ty in ("i1", "u1") else n    # i1 / u1 go through the 32-bit extractor
        return (v % (1 << 8 * size)).to_bytes(size, "little")[:n]
    try:
        d = float(v)
    except (TypeError, ValueError):
        raise OperandError(f"a float parameter ({ty}) got {type(v).__name__} {v!r}") from None
    if ty in ("fp32", "f32"):
        return np.float32(d).tobytes()                 # (float)double: round to nearest even
    if ty == "fp64":
        return struct.pack("<d", d)
    if ty == "fp16":
        return struct.pack("<e", d)        # PyFloat_Pack2, as the driver: nearest even, and
                                           # OverflowError past the f16 range
    if ty == "bf16":
        return (np.float32(d).view(np.uint32) >> np.uint32(16)).astype("<u2").tobytes()
    raise OperandError(f"Triton parameter type {ty!r} is not known to ptxsim's launcher")


def _tensor_map(desc, meta: dict):
    """A host TensorDescriptor as the CUtensorMap `fill_tma_descriptor_tiled` encodes."""
    from ptxsim.machine.tensormap import TensorMap
    if meta.get("is_im2col"):
        raise OperandError("im2col tensor descriptors are not modelled by ptxsim yet")
    shape = [int(s) for s in desc.shape]
    strides = [int(s) for s in desc.strides]
    if strides[-1] != 1:
        raise OperandError(f"tensor descriptor: the last stride must be 1, got {strides}")
    if meta["fp4_padded"]:
        shape[-1] *= 2
    elem_size = int(meta["elem_size"])
    elem_type = _TMA_TF32 if desc.round_f32_to_tf32 else _TMA_DEVICE_TO_HOST[meta["elem_type"]]
    rank = len(meta["block_size"])
    dims = list(reversed(shape))
    bstrides = [elem_size * s for s in reversed(strides[:-1])]
    box = list(reversed([int(b) for b in meta["block_size"]]))
    return TensorMap.encode_tiled(elem_type, rank, _host.address_of(desc.base), dims, bstrides,
                                  box, [1] * rank, "none", int(meta["swizzle"]), "128B",
                                  "nan_request_zero_fma" if desc.padding == "nan" else "none")


def _expand(signature: dict, args, tensordesc_meta) -> list[tuple[str, object, str]]:
    """(Triton type, value, argument name) per kernel parameter, as the NVIDIA launcher passes
    them."""
    flat = []
    for (name, sig), arg in zip(signature.items(), args):
        _flatten(sig, arg, str(name), flat)
    out, metas = [], list(tensordesc_meta or [])
    k = 0
    for ty, arg, name in flat:
        if isinstance(ty, str) and ty.startswith("tensordesc"):
            if metas:
                meta = metas[k]
                k += 1
                out.append(("nvTmaDesc", (_tensor_map(arg, meta), arg.base), name))
            else:                                      # lowered to pointer + shape + strides
                out.append(("*" + ty.split("<")[1].split("[")[0], arg.base, name))
                out += [("i64", int(s), name) for s in arg.shape]
                out += [("i64", int(s), name) for s in arg.strides]
                out += [("i1", arg.padding == "nan", name),
                        ("i1", bool(arg.round_f32_to_tf32), name)]
            out += [("i32", int(s), name) for s in arg.shape]
            out += [("i64", int(s), name) for s in arg.strides]
        else:
            out.append((ty, arg, name))
    return out


def _param_size(p) -> int:
    from ptxsim.machine.program import TYPE_BYTES
    size = TYPE_BYTES.get(p.type or ".b8", 1)
    for d in p.dims:
        size *= int(d)
    return size


# ---------------------------------------------------------------------------------------------
# the launcher Triton calls
# ---------------------------------------------------------------------------------------------
class PtxsimLauncher:
    """driver.launcher_cls: built once per compiled kernel, called once per launch."""

    def __init__(self, src, metadata):
        constants = getattr(src, "constants", {}) or {}
        self.signature = dict(src.signature)
        self.constants = constants
        self.tensordesc_meta = getattr(metadata, "tensordesc_meta", None)
        self.num_ctas = getattr(metadata, "num_ctas", 1)
        self.num_warps = metadata.num_warps
        self.shared = metadata.shared
        self.global_scratch = (metadata.global_scratch_size, metadata.global_scratch_align)
        self.profile_scratch = (metadata.profile_scratch_size, metadata.profile_scratch_align)

    def __call__(self, gridX, gridY, gridZ, stream, function, kernel_metadata, launch_metadata,
                 launch_enter_hook, launch_exit_hook, *args):
        from triton.runtime import _allocation, driver
        loaded: LoadedKernel = driver.active.utils.modules[function]
        n_programs = gridX * gridY * gridZ

        def scratch(size_align, allocator):
            size, align = size_align
            if size > 0 and n_programs > 0:
                return allocator(n_programs * self.num_ctas * size, align, stream)
            return None
        global_scratch = scratch(self.global_scratch, _allocation._allocator.get())
        if _allocation.has_profile_allocator():
            profile = scratch(self.profile_scratch, _allocation._profile_allocator.get())
        else:
            profile = scratch(self.profile_scratch, driver.active.allocate_default_profile_scratch)
        params = _expand(self.signature, args, self.tensordesc_meta)
        params += [("*i8", global_scratch, "global scratch"),
                   ("*i8", profile, "profile scratch")]
        if launch_enter_hook is not None:
            launch_enter_hook(launch_metadata)
        if n_programs > 0:
            record = _record(loaded, params, (gridX * self.num_ctas, gridY, gridZ),
                             32 * self.num_warps, (self.num_ctas, 1, 1) if self.num_ctas > 1
                             else None, self.shared)
            _execute(record)
            STATE.launches.append(record)
        if launch_exit_hook is not None:
            launch_exit_hook(launch_metadata)


def _record(loaded: LoadedKernel, params, grid, block, cluster, shared) -> TritonLaunch:
    entry = next((f for f in loaded.module.functions if f.name == loaded.name and
                  f.kind == ".entry"), None)
    if entry is None:
        raise OperandError(f"the PTX of kernel {loaded.name} has no .entry {loaded.name}")
    if len(entry.params) != len(params):
        raise OperandError(
            f"kernel {loaded.name}: the .entry declares {len(entry.params)} parameters, "
            f"Triton's signature gives {len(params)} ({', '.join(t for t, _, _ in params)})")
    values, objects = [], []
    for p, (ty, arg, name) in zip(entry.params, params):
        size = _param_size(p)
        if ty.startswith("*"):
            if arg is not None and not isinstance(arg, (int, np.integer)):
                objects.append((name, arg))
            v = _host.address_of(arg)
            want = 8
        elif ty == "nvTmaDesc":
            (v, base), want = arg, 128
            objects.append((f"{name}.base", base))
        else:
            v = _scalar_bytes(ty, arg)
            want = len(v)
        if size != want:
            raise OperandError(f"kernel {loaded.name}: parameter {p.name} is {size} bytes in the "
                               f".entry, Triton passes a {ty} of {want} bytes")
        values.append((p.name, ty, v))
    return TritonLaunch(loaded.name, loaded.ptx, loaded.module, tuple(grid), block, cluster,
                        shared, STATE.device().name, values, objects, sanitize=STATE.sanitize)


def _execute(record: TritonLaunch):
    from ptxsim.machine.executor import Launch
    args = [v for _, _, v in record.params]
    t = time.perf_counter()
    launch = Launch(record.module, record.kernel, record.grid, record.block, record.cluster, args,
                    target=record.target, dynamic_shared=record.dynamic_shared,
                    sanitize=record.sanitize)
    _host.HostMemory(launch.gmem, record.objects)
    record.launch = launch
    try:
        launch.run()
    except PtxsimError as e:
        raise _fault(record, e) from e
    finally:
        record.seconds = time.perf_counter() - t
        STATE.steps += launch.guard.steps
    if launch.findings.errors:
        warnings.warn(_findings_text(record, launch.findings.errors), FindingWarning,
                      stacklevel=2)
    return launch


def _findings_text(record: TritonLaunch, errors) -> str:
    """The sanitizer's error findings of a launch, each with its Triton source line."""
    import linecache
    smap = SourceMap(record.ptx)
    parts = [f"kernel {record.kernel}: the sanitizer found {len(errors)} error(s) "
             "(ptxsim.triton.last_launch().findings; docs/sanitizer.md)"]
    for f in errors:
        parts.append(str(f))
        src = smap.source(f.line) if f.line else None
        if src:
            code = linecache.getline(src[0], src[1]).strip()
            parts.append(f"    Triton source {src[0]}:{src[1]}:{src[2]}" + (f": {code}" if code
                                                                            else ""))
    return "\n".join(parts)


def _fault(record: TritonLaunch, e: PtxsimError) -> KernelFault:
    """The error of a failed launch, with the PTX line and the Triton source line."""
    import linecache
    smap = SourceMap(record.ptx)
    line = getattr(e, "ptx_line", None)
    if line is None:
        m = re.search(r"\bline (\d+)", str(e))
        line = int(m[1]) if m else None
    parts = [f"kernel {record.kernel} failed in ptxsim: {type(e).__name__}: {e}"]
    src = smap.source(line) if line else None
    if line:
        parts.append(f"  PTX line {line}: {smap.text(line)}")
    if getattr(e, "ctaid", None) is not None:
        parts.append(f"  CTA {e.ctaid}, thread {getattr(e, 'tid', '?')}")
    if src:
        f, ln, col = src
        code = linecache.getline(f, ln).rstrip()
        parts.append(f"  Triton source {f}:{ln}:{col}" + (f": {code.strip()}" if code else ""))
    return KernelFault("\n".join(parts), cause=e, ptx_line=line, source=src)


# ---------------------------------------------------------------------------------------------
# benchmarking: a simulator has no clock
# ---------------------------------------------------------------------------------------------
def bench(fn, warmup=None, rep=None, grad_to_none=None, quantiles=None, return_mode="mean",
          **_):
    """The driver's benchmarker (what triton.autotune calls): runs `fn` once and reports the
    warp-instruction steps its launches executed as the 'time', so autotuning is deterministic
    and every configuration is run (and checked) once."""
    before = STATE.steps
    fn()
    cost = float(STATE.steps - before)
    if quantiles is not None:
        return [cost] * len(quantiles)
    return [cost] if return_mode == "all" else cost


class _Event:
    def __init__(self, enable_timing=True):
        self.t = None

    def record(self, stream=None):
        self.t = time.perf_counter()

    def elapsed_time(self, other) -> float:
        return (other.t - self.t) * 1e3

    def synchronize(self):
        pass


class DeviceInterface:
    """What triton.testing.do_bench needs of a device module (torch.cuda's Event, synchronize):
    events read the host clock, so do_bench measures the simulation's wall time."""
    Event = _Event

    @staticmethod
    def synchronize(device=None):
        pass

    @staticmethod
    def current_device():
        return STATE.device().name
