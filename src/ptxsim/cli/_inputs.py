"""Command-line inputs: files, argument specs, shapes and the output directory, each checked
before anything runs; every problem is an `InputError` (or OperandError / LaunchConfigError)
that names the option it came from. Results are written atomically (a temporary file in the
output directory, then a rename), so an interrupted or failing write never leaves a partial
.npy, and `--out` is validated before the kernel runs so that no result is computed for nothing.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from ptxsim.errors import InputError

from ptxsim.argspec import (SCALARS, dims, load_npy, parse_arg,  # noqa: F401 (the --arg specs)
                            read_text)


def prepare_out(path) -> Path | None:
    """Check --out before the run: a directory that exists or can be created, and writable."""
    if path is None:
        return None
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {path}: exists and is not a directory (results go to "
                         f"{path}/argN.npy)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {path}: cannot create the directory ({exc.strerror or exc})") \
            from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise InputError(f"--out {path}: the directory is not writable")
    return out


def save_atomic(out: Path, name: str, array: np.ndarray) -> Path:
    """np.save to out/name through a temporary file in the same directory, then a rename."""
    target = out / name
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=out)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, array)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return target


def check_nonneg(value, option: str) -> int:
    if value is None:
        return value
    if value < 0:
        raise InputError(f"{option} {value}: must not be negative")
    return value


__all__ = ["read_text", "dims", "parse_arg", "load_npy", "prepare_out", "save_atomic",
           "SCALARS"]
