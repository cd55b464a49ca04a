"""numpy dtypes of capture.cu's binary records (tiled.bin, im2col.bin, replace_NN.bin, tma_NN.bin)."""
import numpy as np

ENC = np.dtype([("kind", "<i4"), ("result", "<i4"), ("dtype", "<i4"), ("rank", "<i4"),
                ("interleave", "<i4"), ("swizzle", "<i4"), ("l2", "<i4"), ("oob", "<i4"),
                ("addr", "<u8"), ("dims", "<u8", 5), ("strides", "<u8", 4), ("box", "<u4", 5),
                ("estr", "<u4", 5), ("lower", "<i4", 3), ("upper", "<i4", 3), ("cpp", "<u4"),
                ("ppc", "<u4"), ("map", "u1", 128)])
REP = np.dtype([("base", "<i4"), ("field", "<i4"), ("ord", "<i4"), ("loaded", "<i4"),
                ("value", "<u8"), ("before", "u1", 128), ("after", "u1", 128)])
TMA = np.dtype([("kind", "<i4"), ("result", "<i4"), ("c0", "<i4"), ("c1", "<i4"),
                ("map", "u1", 128), ("out", "u1", 8192)])
FIELDS = ("global_address", "rank", "box_dim", "global_dim", "global_stride", "element_stride",
          "elemtype", "interleave_layout", "swizzle_mode", "fill_mode", "swizzle_atomicity")
