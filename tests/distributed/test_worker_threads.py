"""Local workers share the arithmetic threads (numerics.backend) among themselves: N workers
each splitting MMA batches over every core would run N x cores threads on the cores."""
import pytest

from ptxsim.distributed import local
from ptxsim.distributed.parts import Part, PartResult
from ptxsim.numerics import backend


def _report_threads(launch, part, on_wave=None, in_place=False):
    return PartResult(part, host=str(backend.threads()))


@pytest.mark.parametrize("threads,workers,each", [(2, 2, 1), (8, 2, 4), (6, 4, 1), (1, 2, 1)])
def test_each_worker_gets_its_share_of_the_threads(monkeypatch, threads, workers, each):
    old = backend.set_threads(threads)
    try:
        monkeypatch.setattr(local, "run_part", _report_threads)
        parts = [Part(i, (i,), 1) for i in range(workers)]
        got = local.run_local(None, parts, new_session=False)
        assert [int(r.host) for r in got] == [each] * workers
        assert backend.threads() == threads           # the driver keeps its own count
    finally:
        backend.set_threads(old)
