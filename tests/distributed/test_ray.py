"""The Ray backend on a local Ray with 2 CPUs (`ray.init(num_cpus=2)`): a 2-worker launch of the
Triton and the CuTe DSL GEMM equals the one-process bits; errors and merge conflicts come back
named. Slow (a Ray start costs 5-20 s here): `pytest -m slow tests/distributed`."""
import sys
from pathlib import Path

import numpy as np
import pytest

import ptxsim
from ptxsim.errors import MemoryAccessError, MergeConflict

sys.path.insert(0, str(Path(__file__).parent))
from test_launch import SMALL, cute_gemm, triton_gemm  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray():
    ray = pytest.importorskip("ray")          # here, not at collection: the suite skips these
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("gemm", [triton_gemm, cute_gemm])
def test_two_ray_workers_equal_one_process(ray, gemm):
    _, _, _, one = gemm(None)
    run, _, _, two = gemm(ray)
    assert run.distribution.backend == "ray" and run.distribution.workers == 2
    assert np.array_equal(two, one)


def test_ray_by_name_and_address_string(ray):
    _, _, _, one = triton_gemm(None)
    run, _, _, two = triton_gemm("ray:auto")        # the running cluster
    assert run.distribution.backend == "ray" and np.array_equal(two, one)


def test_a_conflict_and_a_fault_come_back_named_from_ray(ray):
    with pytest.raises(MergeConflict):
        ptxsim.launch(SMALL, "race", 4, 32, args=[np.zeros(4, np.uint32)], max_resident_ctas=2,
                      workers=ray)
    one, two = np.zeros(192, np.uint32), np.zeros(192, np.uint32)
    with pytest.raises(MemoryAccessError) as e1:
        ptxsim.launch(SMALL, "fault", 4, 32, args=[one], max_resident_ctas=1)
    with pytest.raises(MemoryAccessError) as e2:
        ptxsim.launch(SMALL, "fault", 4, 32, args=[two], max_resident_ctas=1, workers=ray)
    assert str(e2.value) == str(e1.value) and np.array_equal(two, one)


def test_a_ray_farm_of_fifty_with_two_failing(ray):
    from test_farm import check_fifty, fifty_with_two_failing

    from ptxsim.distributed import farm
    tasks = fifty_with_two_failing()
    report = farm(tasks, workers=ray, progress=False)
    assert report.backend == "ray" and report.workers == 2
    check_fifty(report, tasks)


def test_a_dying_ray_task_fails_its_row_only(ray):
    from test_farm import DieOn, saxpy_tasks

    from ptxsim.distributed import farm
    tasks = saxpy_tasks(4)
    tasks[1].check = DieOn(9)
    report = farm(tasks, workers="ray", progress=False)
    assert [r.ok for r in report.results] == [True, False, True, True]
    assert report.results[1].error_type == "WorkerError"
