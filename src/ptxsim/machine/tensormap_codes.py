"""The new_val codes of tensormap.replace's .field3 forms (PTX ISA "Tensormap new_val validity"
table; that table is not in /work/shared/spec). Each code is taken only where a public user that
runs on GPUs shows it; codes without such evidence stay a named UnsupportedFeature.

Sources:
- Triton `python/triton/language/extra/cuda/_experimental_tma.py` `_determine_elem_type`
  (commented "https://docs.nvidia.com/cuda/parallel-thread-execution/#tensormap-new-val-validity"):
  8-bit 0, u16 1, u32 2, s32 3, u64 4, s64 5, f16 6, f32 7, f64 9, bf16 10. Note 9 / 10: the PTX
  order is NOT cuda.h's CUtensorMapDataType (FLOAT64 = 8, BFLOAT16 = 9).
- Triton `TMAUtilities.h` `createTMADesc`: elemtype 14 = ".b4x16_p64" (padded fp4,
  CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN16B), swizzle_mode 0 / 1 / 2 / 3 = none / 32B / 64B / 128B,
  interleave_layout 0, fill_mode 0; its lit test `tensormap_create` lowers fill_mode = 1
  (tensormap.replace.tile.fill_mode ... 0x1) next to swizzle_mode 2.
- 13 (.b4x16 = 16U4_ALIGN8B) and 15 (.b6x16_p32 = 16U6_ALIGN16B): the same values in cuda.h,
  whose order the PTX table follows from 11 on (14 confirmed above) — an inference, marked.
Not modelled (no evidence for the code): elemtype 8, 11, 12 (.f32.ftz / .tf32 / .tf32.ftz
slots), interleave_layout 1 / 2, swizzle_mode 4 (96B), every swizzle_atomicity code.
"""
from __future__ import annotations

from ptxsim.errors import UnsupportedFeature

# code -> ptxsim TensorMap field value (machine/tensormap.py names)
ELEMTYPE = {0: "uint8", 1: "uint16", 2: "uint32", 3: "int32", 4: "uint64", 5: "int64",
            6: "float16", 7: "float32", 9: "float64", 10: "bfloat16",
            13: "16u4_align8b", 14: "16u4_align16b", 15: "16u6_align16b"}
SWIZZLE_MODE = {0: "none", 1: "32B", 2: "64B", 3: "128B"}
INTERLEAVE_LAYOUT = {0: "none"}
FILL_MODE = {0: "none", 1: "nan_request_zero_fma"}

TABLES = {"elemtype": ELEMTYPE, "swizzle_mode": SWIZZLE_MODE,
          "interleave_layout": INTERLEAVE_LAYOUT, "fill_mode": FILL_MODE}


def decode(field: str, code: int) -> str:
    """The TensorMap value of a .field3 code, or UnsupportedFeature naming the field and code."""
    table = TABLES.get(field)
    if table is None:
        raise UnsupportedFeature(f"tensormap.replace.{field}: its codes are not modelled "
                                 "(no public evidence of the encoding; docs/executor-gaps.md)")
    if code not in table:
        raise UnsupportedFeature(f"tensormap.replace.{field} code {code}: not modelled (known: "
                                 f"{', '.join(f'{k}={v}' for k, v in table.items())}; "
                                 "docs/executor-gaps.md)")
    return table[code]
