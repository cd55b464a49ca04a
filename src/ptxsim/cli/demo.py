"""`ptxsim demo`: run the bundled sm_100a tcgen05 kernels (dense bf16, 2:4 sparse f16,
block-scaled mxf8) and print each result's check against numpy."""
from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help="run the bundled sm_100a tcgen05 GEMM kernels and "
                              "check them against numpy")
    p.add_argument("names", nargs="*", choices=["dense", "sparse", "mxf8", []], default=[],
                   metavar="NAME", help="dense, sparse, mxf8 (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def run(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from ptxsim.machine.demos import run_demos
    from ptxsim.numerics import backend
    console = Console()
    console.print("ptxsim demo: CUDA C++ kernels with inline tcgen05 PTX "
                  "(src/ptxsim/data/kernels/tcgen05_demo.cu), compiled by nvcc for sm_100a, "
                  "run on the CPU")
    console.print("tensor-core arithmetic: " + (
        "compiled loop (ptxsim.numerics._fdpa_c)" if backend.active() == "c" else
        "numpy (same bits, slower: the compiled loop was not built, no C compiler at install?)"
        if "c" not in backend.available() else "numpy (selected by PTXSIM_NUMERICS=numpy)"))
    results = run_demos(args.names or None, seed=args.seed)
    table = Table()
    for col in ("kernel", "bit-exact (numerics)", "max rel err (f64 numpy)", "time"):
        table.add_column(col, no_wrap=True)
    ok = True
    for r in results:
        ok &= r.bit_exact and r.max_rel_err < 1e-4
        table.add_row(r.name, "yes" if r.bit_exact else "NO", f"{r.max_rel_err:.2e}",
                      f"{r.seconds:.2f} s")
    console.print(table)
    for r in results:
        console.print(f"  {r.name}: {r.what} ({r.steps} scheduler steps)")
    console.print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1
