"""`ptxsim layout smem|tmem`: pictures and text of where each element lives.

The two renderers live in `_layout_smem.py` (shared-memory canonical layouts and swizzles) and
`_layout_tmem.py` (tcgen05.ld/st thread/register <-> lane/column); each defines
`add_arguments(parser)` and `run(args) -> int`.
"""
from __future__ import annotations

import importlib


def register(sub) -> None:
    layout = sub.add_parser("layout", help="draw shared-memory or Tensor Memory layouts")
    which = layout.add_subparsers(dest="space", metavar="SPACE", required=True)
    for space, helptext in (("smem", "shared-memory matrix layout (canonical layouts, swizzles)"),
                            ("tmem", "tcgen05.ld/st thread/register <-> Tensor Memory lane/column")):
        try:
            module = importlib.import_module(f"ptxsim.cli._layout_{space}")
        except ModuleNotFoundError:
            continue
        p = which.add_parser(space, help=helptext)
        module.add_arguments(p)
        p.set_defaults(func=module.run)
