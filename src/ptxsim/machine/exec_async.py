"""Asynchronous-proxy instructions of the executor (TMA, tcgen05, cp.async)."""
from __future__ import annotations


def handler(wave, pc, inst):
    return None
