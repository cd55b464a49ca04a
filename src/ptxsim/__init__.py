"""ptxsim: bit-exact CPU execution of Blackwell tcgen05, warp-level mma.sp and PTX
stack / video / misc instructions."""
from ptxsim.errors import *  # noqa: F401,F403

__version__ = "0.1.0"
from ptxsim.api import execute, launch  # noqa: E402,F401
from ptxsim.distributed import farm  # noqa: E402,F401
from ptxsim.machine.tensormap import TensorMap  # noqa: E402,F401
