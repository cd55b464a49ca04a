"""`ptxsim decode idesc|smem-desc|zcol-mask HEX`: every field of a descriptor by its spec name.

Prints a table (or one JSON object with --json) even when the descriptor is illegal, then the
reasons; exits 1 when there are any.
"""
from __future__ import annotations

import argparse
import json

from ptxsim.errors import DescriptorError
from ptxsim.isa.descriptors import (MMA_KINDS, InstrDescriptor, SmemDescriptor,
                                    ZeroColumnMaskDescriptor)
from ptxsim.isa.targets import KNOWN_TARGETS


def parse_hex(text: str) -> int:
    """'0x08400490', '08400490' or '8400490h'-free hex; underscores allowed."""
    s = text.strip().lower().replace("_", "")
    try:
        return int(s, 16)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a hexadecimal number: {text!r}") from None


def _console():
    import sys

    from rich.console import Console
    # piped output (scripts, tests): wide enough that no field name is wrapped
    return Console(highlight=False, width=None if sys.stdout.isatty() else 160)


def _print_table(title: str, rows, summary: str, errors: list[str]) -> None:
    from rich.markup import escape
    from rich.table import Table
    table = Table(title=title, title_justify="left")
    for col in ("Bits", "Field", "Value", "Meaning"):
        table.add_column(col, no_wrap=col != "Meaning")
    for bits, name, raw, meaning in rows:
        table.add_row(bits, escape(name), str(raw) if raw is not None else "-", escape(meaning))
    console = _console()
    console.print(table)
    console.print(escape(summary))
    if errors:
        console.print(f"[bold red]INVALID[/] ({len(errors)} problem{'s' if len(errors) > 1 else ''}):")
        for e in errors:
            console.print(f"  [red]-[/] {escape(e)}")
    else:
        console.print("[bold green]valid[/]")


def _emit(args, obj: dict, title: str, rows, summary: str) -> int:
    if args.json:
        print(json.dumps(obj))
    else:
        _print_table(title, rows, summary, obj["errors"])
    return 0 if obj["valid"] else 1


def _decode_idesc(args) -> int:
    desc = InstrDescriptor.decode(args.value, args.kind)
    quals = dict(sparse=args.sp, ws=args.ws, cta_group=args.cta_group, target=args.target,
                 scale_vec=args.scale_vec)
    obj = desc.to_json(**quals)
    sp = ".sp" if desc.sparse else ""
    summary = (f"tcgen05.mma{sp}{'.ws' if args.ws else ''}.cta_group::{args.cta_group}"
               f".kind::{args.kind}: M={desc.m} N={desc.n} K={desc.k}  D={obj['dtype']} "
               f"A={obj['atype']} B={obj['btype']}")
    return _emit(args, obj, f"instruction descriptor 0x{args.value:08x} (.kind::{args.kind})",
                 desc.fields_table(), summary)


def _decode_smem(args) -> int:
    desc = SmemDescriptor.decode(args.value)
    obj = desc.to_json(target=args.target, major=args.major)
    summary = (f"start 0x{desc.start_bytes:05x}, LBO {obj['lbo']} ({obj['lbo_mode']}), "
               f"SBO {obj['sbo']}, swizzle {obj['swizzle']}, base offset {desc.base_offset}")
    return _emit(args, obj, f"shared memory descriptor 0x{args.value:016x}", desc.fields_table(),
                 summary)


def _decode_zcol(args) -> int:
    desc = ZeroColumnMaskDescriptor.decode(args.value)
    obj = desc.to_json(m=args.m, n=args.n)
    if obj["valid"]:
        subs = desc.submask_ints(args.m, args.n)
        width = args.n // len(subs)
        summary = "\n".join(f"mask{i}: 0b{v:0{width}b}" for i, v in enumerate(subs))
        summary += f"\nzeroed B columns: {[int(i) for i in desc.mask(args.m, args.n).nonzero()[0]]}"
    else:
        summary = "mask not generated"
    return _emit(args, obj, f"zero-column mask descriptor 0x{args.value:016x} (M={args.m}, N={args.n})",
                 desc.fields_table(), summary)


def register(sub) -> None:
    p = sub.add_parser("decode", help="decode a tcgen05 descriptor and say what is wrong with it")
    which = p.add_subparsers(dest="descriptor", metavar="DESCRIPTOR", required=True)

    def common(q):
        q.add_argument("value", type=parse_hex, metavar="HEX")
        q.add_argument("--json", action="store_true", help="print one JSON object")

    q = which.add_parser("idesc", help="instruction descriptor (Tables 42-44)")
    common(q)
    q.add_argument("--kind", required=True, choices=MMA_KINDS)
    sp = q.add_mutually_exclusive_group()
    sp.add_argument("--sp", dest="sp", action="store_const", const=True, default=None,
                    help="the instruction is tcgen05.mma.sp")
    sp.add_argument("--dense", dest="sp", action="store_const", const=False,
                    help="the instruction is dense tcgen05.mma")
    q.add_argument("--ws", action="store_true", help="the instruction has .ws")
    q.add_argument("--cta-group", type=int, default=1, choices=(1, 2))
    q.add_argument("--target", default="sm_100a", choices=KNOWN_TARGETS)
    q.add_argument("--scale-vec", default=None,
                   choices=("1X", "2X", "4X", "block16", "block32"))
    q.set_defaults(func=_guard(_decode_idesc))

    q = which.add_parser("smem-desc", help="shared memory descriptor (Table 40)")
    common(q)
    q.add_argument("--target", default="sm_100a", choices=KNOWN_TARGETS)
    q.add_argument("--major", choices=("K", "MN"), default=None,
                   help="major-ness of the operand (from the idesc transpose bit)")
    q.set_defaults(func=_guard(_decode_smem))

    q = which.add_parser("zcol-mask", help="zero-column mask descriptor (Table 45)")
    common(q)
    q.add_argument("--n", type=int, required=True, help="N of the MMA")
    q.add_argument("--m", type=int, default=128, choices=(32, 64, 128), help="M of the MMA")
    q.set_defaults(func=_guard(_decode_zcol))


def _guard(fn):
    """Out-of-range input values become a one-line error and exit 1, like other PtxsimErrors."""
    def run(args):
        try:
            return fn(args)
        except DescriptorError as exc:
            if getattr(args, "json", False):
                print(json.dumps({"valid": False, "errors": [str(exc)]}))
                return 1
            raise
    return run
