"""One PTX kernel per base-instruction form (same scheme as hardware/common/ptxgen.py, typed registers).

Memory: a uint32 array [row][thread]; each register takes one row (.b16: the low half, .pred:
0/1) or two rows (.b64: low word, high word). Inputs are loaded from global memory (nothing can be
constant-folded), the one instruction runs, outputs are stored the same way (.b16 zero-extended,
.pred as 0/1). Registers carry the names of the instruction text.
"""
from __future__ import annotations

import bisect
import re
import subprocess
import tempfile
from pathlib import Path

PTX_VERSION = "9.0"


def rows(rt: str) -> int:
    return 2 if rt == ".b64" else 1


def kernel(f: dict) -> str:
    L = [f".visible .entry {f['name']}(.param .u64 pin, .param .u64 pout, .param .u32 n)", "{"]
    for n, (rt, _) in f["regs"].items():
        L.append(f"  .reg {rt} {n};")
    L += ["  .reg .b32 %tq<4>;", "  .reg .b32 %tw<2>;", "  .reg .b64 %pq<6>;",
          "  mov.u32 %tq0, %ctaid.x;", "  mov.u32 %tq1, %ntid.x;", "  mov.u32 %tq2, %tid.x;",
          "  mad.lo.u32 %tq3, %tq0, %tq1, %tq2;",
          "  ld.param.u64 %pq0, [pin];", "  ld.param.u64 %pq1, [pout];", "  ld.param.u32 %tq1, [n];",
          "  cvta.to.global.u64 %pq0, %pq0;", "  cvta.to.global.u64 %pq1, %pq1;",
          "  mul.wide.u32 %pq2, %tq3, 4;", "  mul.wide.u32 %pq3, %tq1, 4;",
          "  add.u64 %pq0, %pq0, %pq2;", "  add.u64 %pq1, %pq1, %pq2;"]
    first = True
    for n in f["inputs"]:
        rt = f["regs"][n][0]
        for k in range(rows(rt)):
            if not first:
                L.append("  add.u64 %pq0, %pq0, %pq3;")
            first = False
            L.append(f"  ld.global.u32 %tw{k}, [%pq0];")
        if rt == ".b64":
            L.append(f"  mov.b64 {n}, {{%tw0, %tw1}};")
        elif rt == ".b16":
            L.append(f"  cvt.u16.u32 {n}, %tw0;")
        elif rt == ".pred":
            L.append(f"  setp.ne.u32 {n}, %tw0, 0;")
        else:
            L.append(f"  mov.b32 {n}, %tw0;")
    L.append("  " + f["instruction"])
    first = True
    for n in f["outputs"]:
        rt = f["regs"][n][0]
        if rt == ".b64":
            L.append(f"  mov.b64 {{%tw0, %tw1}}, {n};")
        elif rt == ".b16":
            L.append(f"  cvt.u32.u16 %tw0, {n};")
        elif rt == ".pred":
            L.append(f"  selp.u32 %tw0, 1, 0, {n};")
        else:
            L.append(f"  mov.b32 %tw0, {n};")
        for k in range(rows(rt)):
            if not first:
                L.append("  add.u64 %pq1, %pq1, %pq3;")
            first = False
            L.append(f"  st.global.u32 [%pq1], %tw{k};")
    L += ["  ret;", "}", ""]
    return "\n".join(L)


def module(kernels: list[str], target: str) -> str:
    return f".version {PTX_VERSION}\n.target {target}\n.address_size 64\n\n" + "\n".join(kernels)


_ERR = re.compile(r"line (\d+); (?:error|fatal)\s*:\s*(.*)")


def ptxas_errors(ptx: str, arch: str):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.ptx"
        p.write_text(ptx)
        r = subprocess.run(["ptxas", f"-arch={arch}", str(p), "-o", str(Path(d) / "m.cubin")],
                           capture_output=True, text=True)
    return r.returncode, [(int(m.group(1)), m.group(2).strip()) for m in _ERR.finditer(r.stderr)], r.stderr


def assemble(ptx: str, arch: str, out: Path) -> None:
    p = out.with_suffix(".ptx")
    p.write_text(ptx)
    subprocess.run(["ptxas", f"-arch={arch}", str(p), "-o", str(out)], check=True)


def legal_subset(items: list[dict], arch: str, chunk: int = 2000):
    """Drop the kernels ptxas rejects (iteratively, per chunk). Returns (accepted, {name: message})."""
    acc, rej = [], {}
    for s in range(0, len(items), chunk):
        alive = items[s:s + chunk]
        for _ in range(20):
            texts, starts, line = [], [], 5
            for it in alive:
                k = kernel(it)
                starts.append(line)
                texts.append(k)
                line += k.count("\n") + 1
            rc, errs, stderr = ptxas_errors(module(texts, arch), arch)
            if rc == 0:
                break
            if not errs:
                raise RuntimeError("ptxas failed without line errors:\n" + stderr[:2000])
            bad = {}
            for ln, msg in errs:
                bad.setdefault(alive[bisect.bisect_right(starts, ln) - 1]["name"], msg)
            rej.update(bad)
            alive = [it for it in alive if it["name"] not in bad]
        else:
            raise RuntimeError("ptxas pruning did not converge")
        acc += alive
    return acc, rej
