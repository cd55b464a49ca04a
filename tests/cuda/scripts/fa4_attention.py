"""FlashAttention-4's attention through its own interface (flash_attn.cute.flash_attn_func), as
on a GPU, checked the way FA4's tests check it (tests/cute/test_flash_attn.py): against
flash_attn.cute.testing.attention_ref in float32, the error at most twice that of the same
attention computed by PyTorch in bf16 plus 2 ulps of the reference's scale. Run by
tests/cuda/test_fa4.py through `ptxsim cute`; prints the time of each call.

    ptxsim cute fa4_attention.py --shape 1,1024,1,128 [--causal] [--backward] [--repeat 2]
"""
import argparse
import time

import torch
from flash_attn.cute.interface import flash_attn_func
from flash_attn.cute.testing import attention_ref


def check(name, got, ref, pt, rtol=2):
    # the forward / backward check of test_flash_attn_output
    atol = 2 * (ref + 0.3 - 0.3 - ref).abs().max().item()
    diff, diff_pt = (got - ref).abs().max().item(), (pt - ref).abs().max().item()
    print(f"{name}: max diff {diff} (PyTorch bf16: {diff_pt}, atol {atol})")
    assert diff <= rtol * diff_pt + atol, f"{name}: {diff} > {rtol} * {diff_pt} + {atol}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="1,128,1,64", help="batch,seqlen,heads,headdim")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--backward", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="forward calls (the first compiles)")
    args = ap.parse_args()
    b, s, h, d = (int(x) for x in args.shape.split(","))
    torch.random.manual_seed(0)
    q_ref, k_ref, v_ref = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                           .requires_grad_() for _ in range(3))
    q, k, v = (x.detach().requires_grad_(args.backward) for x in (q_ref, k_ref, v_ref))
    for i in range(args.repeat):
        t0 = time.perf_counter()
        out, lse = flash_attn_func(q, k, v, causal=args.causal)
        print(f"forward call {i}: {time.perf_counter() - t0:.2f} s")
    assert out.is_cuda and out.shape == (b, s, h, d)
    out_ref, _ = attention_ref(q_ref, k_ref, v_ref, None, None, causal=args.causal)
    out_pt, _ = attention_ref(q_ref, k_ref, v_ref, None, None, causal=args.causal,
                              upcast=False, reorder_ops=True)
    check("out", out, out_ref, out_pt)
    if args.backward:
        g = torch.randn_like(out)
        t0 = time.perf_counter()
        grads = torch.autograd.grad(out, (q, k, v), g)
        print(f"backward call: {time.perf_counter() - t0:.2f} s")
        refs = torch.autograd.grad(out_ref, (q_ref, k_ref, v_ref), g)
        pts = torch.autograd.grad(out_pt, (q_ref, k_ref, v_ref), g)
        for name, got, ref, pt in zip(("dq", "dk", "dv"), grads, refs, pts):
            check(name, got, ref, pt)
    print("PASS")


if __name__ == "__main__":
    main()
