"""Warnings the lower layers give during a launch (isa, numerics: they know no PTX line) name the
line and text of the instruction being run (errors.CURRENT, set by the executor per step and by
the asynchronous proxy while an operation completes).

- A kernel whose tcgen05.mma.sp meets CUTLASS's metadata for a chunk of zeros (0b0000: both
  indices 0, a value 9.7.16.10.8.2 does not list; isa/sparsity.check_metadata) runs with a
  SpecDeviationWarning naming the MMA's line: it is given when the MMA completes, asynchronously.
  The kernel is the bundled demo's nvcc-compiled sparse_f16_gemm (one CTA, 128 x 64 x 64, two
  tcgen05.mma.sp of K = 32).
- fma.rz.bf16 (an unlisted rounding, isa/floating.py) warns with its line at the step itself.
- Outside a launch the same warning names no line."""
import re
import warnings

import numpy as np

from ptxsim.api import launch
from ptxsim.errors import SpecDeviationWarning
from ptxsim.isa import sparsity
from ptxsim.machine import demos

K = 64


def _run(ptx, Ac, nib, B):
    D = np.zeros((128, 64), np.float32)
    launch(ptx, "sparse_f16_gemm", 1, 128,
           args=[Ac.astype(np.uint16), B.view(np.uint16),
                 demos.sparse_f16_metadata_words(nib, K).ravel(), D],
           dynamic_shared=128 * K + 64 * K * 2 + 16)
    return D


def test_the_zero_chunk_warning_names_the_line_of_the_mma():
    rng = np.random.default_rng(11)
    A = rng.standard_normal((128, K)).astype(np.float16)
    keep = np.zeros((128, K), bool)
    pick = np.argsort(rng.random((128, K // 4, 4)), axis=2)[:, :, :2]
    np.put_along_axis(keep.reshape(128, K // 4, 4), pick, True, axis=2)
    A[~keep] = 0
    A[5, 12:16] = 0                                   # row 5, chunk 3 (first instruction)
    Ac, nib = sparsity.compress(A.view(np.uint16), "f16")
    assert not Ac[5, 6:8].any()                       # its stored pair: two zeros
    B = rng.standard_normal((64, K)).astype(np.float16)
    ptx = demos.kernel_ptx()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecDeviationWarning)
        legal = _run(ptx, Ac, nib, B)                 # the compressor's own (listed) value
    cutlass = nib.copy()
    cutlass[5, 3] = 0b0000                            # CUTLASS's value for a chunk of zeros
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _run(ptx, Ac, cutlass, B)
    msgs = [str(w.message) for w in caught if issubclass(w.category, SpecDeviationWarning)]
    assert len(msgs) == 1, msgs
    lines = [i + 1 for i, t in enumerate(ptx.splitlines()) if "tcgen05.mma.sp" in t]
    m = re.match(r"line (\d+): tcgen05\.mma\.sp\.cta_group::1\.kind::f16 ", msgs[0])
    assert m and int(m.group(1)) == lines[0], (msgs[0], lines)
    assert "metadata value 0b0000 is undefined (9.7.16.10.8)" in msgs[0]
    # both stored values are zero: the chunk adds nothing, whatever index it names
    assert np.array_equal(got.view(np.uint32), legal.view(np.uint32))


FMA_RZ = """.version 8.7
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
{
 .reg .b16 %h<4>;
 .reg .b64 %rd<3>;
 ld.param.u64 %rd1, [p];
 ld.global.b16 %h1, [%rd1];
 fma.rz.bf16 %h2, %h1, %h1, %h1;
 st.global.b16 [%rd1], %h2;
 ret;
}
"""


def test_an_unlisted_rounding_warns_with_its_line_and_none_outside_a_launch():
    from ptxsim.errors import UnlistedFormWarning
    from ptxsim.isa import floating
    x = np.array([0x3F08], np.uint16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch(FMA_RZ, "k", 1, 32, args=[x])
    msgs = [str(w.message) for w in caught if issubclass(w.category, UnlistedFormWarning)]
    line = 1 + FMA_RZ.splitlines().index(" fma.rz.bf16 %h2, %h1, %h1, %h1;")
    assert msgs and msgs[0].startswith(f"line {line}: fma.rz.bf16 %h2, %h1, %h1, %h1;: "), msgs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        v = np.array([0x3F08], np.uint16)
        floating.fma(v, v, v, type="bf16", rnd="rz")
    msgs = [str(w.message) for w in caught if issubclass(w.category, UnlistedFormWarning)]
    assert msgs and msgs[0].startswith("fma.rz.bf16: "), msgs
