"""`ptxsim encode idesc|smem-desc|zcol-mask ...`: build a descriptor from named fields, print hex.

The hex goes to stdout even when the descriptor is illegal for the given qualifiers; the
reasons go to stderr and the exit code is 1.
"""
from __future__ import annotations

import sys

from ptxsim.isa.descriptors import (MMA_KINDS, SWIZZLE_CODES, InstrDescriptor, SmemDescriptor,
                                    ZeroColumnMaskDescriptor)
from ptxsim.isa.targets import KNOWN_TARGETS


def _report(hex_text: str, issues) -> int:
    print(hex_text)
    for e in issues:
        print(f"ptxsim: invalid: {e}", file=sys.stderr)
    return 1 if issues else 0


def _int(text: str) -> int:
    return int(text, 0)


def _encode_idesc(a) -> int:
    dtype = a.dtype or ("s32" if a.kind == "i8" else "f32")
    d = InstrDescriptor.make(
        a.kind, m=a.m, n=a.n, atype=a.atype, btype=a.btype, dtype=dtype, sparse=a.sparse,
        selector=a.selector, saturate=a.saturate, negate_a=a.negate_a, negate_b=a.negate_b,
        transpose_a=a.transpose_a, transpose_b=a.transpose_b, max_shift=a.max_shift,
        scale_type=a.scale_type, scale_a_id=a.scale_a_id, scale_b_id=a.scale_b_id, k96=a.k96)
    issues = d.issues(sparse=a.sparse, ws=a.ws, cta_group=a.cta_group, target=a.target,
                      scale_vec=a.scale_vec)
    return _report(f"0x{d.encode():08x}", issues)


def _encode_smem(a) -> int:
    d = SmemDescriptor.make(start_address=a.start, lbo=a.lbo, sbo=a.sbo, swizzle=a.swizzle,
                            base_offset=a.base_offset, lbo_mode=a.lbo_mode)
    return _report(f"0x{d.encode():016x}", d.issues(target=a.target, major=a.major))


def _encode_zcol(a) -> int:
    d = ZeroColumnMaskDescriptor.make(start_count=a.start_count, first_span=a.first_span,
                                      non_zero_mask=not a.no_mask, skip=a.skip, use=a.use,
                                      shift=a.shift)
    return _report(f"0x{d.encode():016x}", d.issues(m=a.m, n=a.n))


def _four(text: str) -> tuple[int, ...]:
    vals = tuple(int(x, 0) for x in text.split(","))
    if len(vals) != 4:
        raise ValueError("give four comma-separated values (sub-masks 0,1,2,3)")
    return vals


def register(sub) -> None:
    p = sub.add_parser("encode", help="build a tcgen05 descriptor from named fields, print hex")
    which = p.add_subparsers(dest="descriptor", metavar="DESCRIPTOR", required=True)

    q = which.add_parser("idesc", help="instruction descriptor (Tables 42-44)")
    q.add_argument("--kind", required=True, choices=MMA_KINDS)
    q.add_argument("--m", type=int, required=True)
    q.add_argument("--n", type=int, required=True)
    q.add_argument("--atype", required=True, help="PTX type name, e.g. bf16, e4m3, s8, tf32")
    q.add_argument("--btype", required=True)
    q.add_argument("--dtype", default=None, help="f16, f32 or s32 (default f32; s32 for i8)")
    q.add_argument("--sparse", action="store_true", help="tcgen05.mma.sp")
    q.add_argument("--selector", type=int, default=0, help="sparsity selector")
    q.add_argument("--saturate", action="store_true")
    q.add_argument("--negate-a", action="store_true")
    q.add_argument("--negate-b", action="store_true")
    q.add_argument("--transpose-a", action="store_true")
    q.add_argument("--transpose-b", action="store_true")
    q.add_argument("--max-shift", type=int, default=0, choices=(0, 1, 2, 3))
    q.add_argument("--scale-type", default=None, choices=("ue8m0", "ue4m3"))
    q.add_argument("--scale-a-id", type=int, default=0)
    q.add_argument("--scale-b-id", type=int, default=0)
    q.add_argument("--k96", action="store_true", help="K=96 (bit 31, mxf4/mxf4nvf4, sm_103a)")
    q.add_argument("--ws", action="store_true", help="validate for .ws")
    q.add_argument("--cta-group", type=int, default=1, choices=(1, 2))
    q.add_argument("--target", default="sm_100a", choices=KNOWN_TARGETS)
    q.add_argument("--scale-vec", default=None, choices=("1X", "2X", "4X", "block16", "block32"))
    q.set_defaults(func=_encode_idesc)

    q = which.add_parser("smem-desc", help="shared memory descriptor (Table 40); sizes in bytes")
    q.add_argument("--start", type=_int, required=True, help="matrix start address (bytes)")
    q.add_argument("--lbo", type=_int, default=16, help="leading dimension byte offset/address")
    q.add_argument("--sbo", type=_int, required=True, help="stride dimension byte offset")
    q.add_argument("--swizzle", default="none", choices=tuple(SWIZZLE_CODES))
    q.add_argument("--base-offset", type=int, default=0)
    q.add_argument("--lbo-mode", default="relative", choices=("relative", "absolute"))
    q.add_argument("--major", default=None, choices=("K", "MN"))
    q.add_argument("--target", default="sm_100a", choices=KNOWN_TARGETS)
    q.set_defaults(func=_encode_smem)

    q = which.add_parser("zcol-mask", help="zero-column mask descriptor (Table 45)")
    q.add_argument("--start-count", type=_four, default=(0, 0, 0, 0), help="sc0,sc1,sc2,sc3")
    q.add_argument("--first-span", type=_four, default=(0, 0, 0, 0), help="fs0,fs1,fs2,fs3")
    q.add_argument("--skip", type=int, required=True, help="zeroed columns per period")
    q.add_argument("--use", type=int, required=True, help="used columns per period")
    q.add_argument("--shift", type=int, default=0, help="column shift")
    q.add_argument("--no-mask", action="store_true", help="Non-Zero Mask = 0")
    q.add_argument("--m", type=int, default=128, choices=(32, 64, 128))
    q.add_argument("--n", type=int, default=None)
    q.set_defaults(func=_encode_zcol)
