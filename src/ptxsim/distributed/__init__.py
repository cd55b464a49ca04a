"""Scale-out (front door): one launch split across worker processes or a Ray cluster
(`launch(..., workers=...)`), and farms of many independent launches (`farm`).
docs/distributed.md."""
from ptxsim.distributed.launch import (Distribution, launch, resolve_workers,  # noqa: F401
                                       run_launch)
from ptxsim.distributed.farm import FarmReport, Task, TaskResult, farm  # noqa: F401,E402
from ptxsim.distributed.pool import close_pool, kept_pids  # noqa: F401,E402
