"""Tests of ptxsim.triton, the Triton front door: they need Triton 3.9 and CPU torch (the test
extra installs both) and skip without them."""
import os

import pytest

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")     # Triton 3.9's default, without its warning

triton = pytest.importorskip("triton", reason="Triton is not installed (pip install '.[triton]')")
pytest.importorskip("torch", reason="torch is not installed")


@pytest.fixture
def sm100():
    """Launches run on ptxsim for sm_100a; afterwards the driver Triton picks by itself."""
    import ptxsim.triton as pt
    pt.use("sm_100a")
    yield pt
    pt.use(None)
