"""Emit one PTX kernel per captured instruction, and let ptxas decide which are legal.

Each kernel reads its input registers from a uint32 array laid out [register][thread] (thread =
global thread index), executes the one instruction, and writes its output registers to a second
array laid out the same way. Registers carry the exact names used in the instruction text, so the
text recorded in the vector files is the text that ran.
"""
from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

PTX_VERSION = "9.0"


def kernel(name: str, instruction: str, inputs: list[str], outputs: list[str],
           decls: str) -> str:
    lines = [f".visible .entry {name}(.param .u64 pin, .param .u64 pout, .param .u32 n)", "{",
             decls,
             "  .reg .b32 %tq<4>;", "  .reg .b64 %pq<6>;",
             "  mov.u32 %tq0, %ctaid.x;", "  mov.u32 %tq1, %ntid.x;", "  mov.u32 %tq2, %tid.x;",
             "  mad.lo.u32 %tq3, %tq0, %tq1, %tq2;",
             "  ld.param.u64 %pq0, [pin];", "  ld.param.u64 %pq1, [pout];",
             "  ld.param.u32 %tq1, [n];",
             "  cvta.to.global.u64 %pq0, %pq0;", "  cvta.to.global.u64 %pq1, %pq1;",
             "  mul.wide.u32 %pq2, %tq3, 4;", "  mul.wide.u32 %pq3, %tq1, 4;",
             "  add.u64 %pq0, %pq0, %pq2;", "  add.u64 %pq1, %pq1, %pq2;"]
    for i, r in enumerate(inputs):
        if i:
            lines.append("  add.u64 %pq0, %pq0, %pq3;")
        lines.append(f"  ld.global.u32 {r}, [%pq0];")
    lines.append("  " + instruction)
    for i, r in enumerate(outputs):
        if i:
            lines.append("  add.u64 %pq1, %pq1, %pq3;")
        lines.append(f"  st.global.u32 [%pq1], {r};")
    lines += ["  ret;", "}", ""]
    return "\n".join(lines)


def module(kernels: list[str], target: str) -> str:
    return f".version {PTX_VERSION}\n.target {target}\n.address_size 64\n\n" + "\n".join(kernels)


_ERR = re.compile(r"line (\d+); (?:error|fatal)\s*:\s*(.*)")


def ptxas_errors(ptx: str, arch: str) -> tuple[int, list[tuple[int, str]], str]:
    """Assemble; return (returncode, [(line, message)], stderr)."""
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.ptx"
        p.write_text(ptx)
        r = subprocess.run(["ptxas", f"-arch={arch}", str(p), "-o", str(Path(d) / "m.cubin")],
                           capture_output=True, text=True)
    errs = [(int(m.group(1)), m.group(2).strip()) for m in _ERR.finditer(r.stderr)]
    return r.returncode, errs, r.stderr


def assemble(ptx: str, arch: str, out: Path) -> None:
    p = out.with_suffix(".ptx")
    p.write_text(ptx)
    subprocess.run(["ptxas", f"-arch={arch}", str(p), "-o", str(out)], check=True)


def legal_subset(items: list[dict], arch: str, target: str, decls_of) -> tuple[list[dict], dict]:
    """Iteratively drop kernels ptxas rejects. items: dicts with name, instruction, inputs, outputs.
    Returns (accepted items, {name: first error message})."""
    rejected: dict[str, str] = {}
    alive = list(items)
    for _ in range(20):
        texts, starts, line = [], [], 5
        for it in alive:
            k = kernel(it["name"], it["instruction"], it["inputs"], it["outputs"], decls_of(it))
            starts.append(line)
            texts.append(k)
            line += k.count("\n") + 1
        rc, errs, stderr = ptxas_errors(module(texts, target), arch)
        if rc == 0:
            return alive, rejected
        if not errs:
            raise RuntimeError("ptxas failed without line errors:\n" + stderr[:2000])
        import bisect
        bad = {}
        for ln, msg in errs:
            i = bisect.bisect_right(starts, ln) - 1
            bad.setdefault(alive[i]["name"], msg)
        rejected.update(bad)
        alive = [it for it in alive if it["name"] not in bad]
    raise RuntimeError("ptxas pruning did not converge")
