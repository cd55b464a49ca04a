"""Farms: many independent launches in worker processes; failures are rows, never a stopped farm.
Results are checked against numpy on the same generated inputs (saxpy: fma.rn.f32 is one
rounding of the exact a*x+y, which float64 holds exactly here)."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

import ptxsim
from ptxsim.cli import main
from ptxsim.distributed.farm import Task, _digest, expand_spec, farm, load_spec, make_args
from ptxsim.errors import FarmSpecError

HERE = Path(__file__).parent
SMALL = HERE / "data" / "small.ptx"
BASIC = HERE.parent / "machine" / "data" / "exec" / "basic.ptx"


def saxpy_tasks(count: int) -> list[Task]:
    tasks = []
    for i in range(count):
        n = 64 + 37 * i
        tasks.append(Task(SMALL, "saxpy", grid=-(-n // 128), block=128,
                          args=["f32:1.5", f"rand:float32:{n}", f"rand:float32:{n}", f"i32:{n}"],
                          name=f"saxpy{n}", shape={"n": n}, seed=i))
    return tasks


def want_digest(task: Task) -> str:
    a, x, y, n = make_args(task.args, task.seed)
    return _digest((np.float64(a) * x.astype(np.float64) + y).astype(np.float32))


def fifty_with_two_failing() -> list[Task]:
    tasks = saxpy_tasks(48)
    # n past the arrays' end: the last CTA stores outside the buffer (MemoryAccessError)
    tasks.insert(10, Task(SMALL, "saxpy", grid=2, block=128, name="past_the_end",
                          args=["f32:1.0", "rand:float32:100", "rand:float32:100", "i32:256"]))
    # every warp waits on an mbarrier nobody arrives at (DeadlockError)
    tasks.insert(30, Task(BASIC, "hang", grid=2, block=64, name="hang",
                          args=["zeros:int32:64"]))
    return tasks


def check_fifty(report, tasks):
    assert len(report.results) == 50
    assert len(report.ok) == 48 and len(report.failures) == 2
    failed = {r.name: r for r in report.failures}
    assert failed["past_the_end"].error_type == "MemoryAccessError"
    assert "outside every mapped buffer" in failed["past_the_end"].error
    assert failed["hang"].error_type == "DeadlockError"
    assert "mbarrier.try_wait.parity" in failed["hang"].error
    for r in report.ok:
        assert r.outputs["arg2"] == want_digest(tasks[r.index]), r.name


def test_a_farm_of_fifty_with_two_failing_gives_48_results_and_2_named_failures():
    tasks = fifty_with_two_failing()
    report = farm(tasks, workers=2, progress=False)
    assert report.backend == "local" and report.workers == 2
    check_fifty(report, tasks)
    assert len({r.pid for r in report.results}) == 2        # both workers took tasks


def test_one_worker_runs_them_in_this_process():
    tasks = saxpy_tasks(3)
    report = farm(tasks, workers=1, progress=False)
    assert report.backend == "one process"
    assert {r.pid for r in report.results} == {os.getpid()}
    assert all(r.outputs["arg2"] == want_digest(t) for r, t in zip(report.results, tasks))


class DieOn:
    """A task check that ends its worker process (a crash the farm must survive)."""

    def __init__(self, code):
        self.code = code

    def __call__(self, args):
        os._exit(self.code)


def test_a_worker_that_dies_fails_its_task_only():
    tasks = saxpy_tasks(6)
    tasks[2].check = DieOn(5)
    report = farm(tasks, workers=2, progress=False)
    assert [r.status for r in report.results] == ["ok"] * 2 + ["failed"] + ["ok"] * 3
    bad = report.results[2]
    assert bad.error_type == "WorkerError" and "exit code 5" in bad.error


def test_a_failing_check_is_a_failed_row():
    def check(args):
        raise AssertionError("y is wrong")
    tasks = saxpy_tasks(2)
    tasks[1].check = check
    report = farm(tasks, workers=1, progress=False)
    assert report.results[1].error_type == "AssertionError"
    assert report.results[1].error == "y is wrong" and report.results[0].ok


SPEC = """
workers = 2

[defaults]
block = 128

[[kernels]]
file = "{small}"
kernel = "saxpy"
grid = "({{n}} + 127) // 128"
args = ["f32:2.0", "rand:float32:{{n}}", "rand:float32:{{n}}", "i32:{{n}}"]
shapes = [{{n = 100}}, {{n = 1000}}, {{n = 300}}]
options = [{{}}, {{max_resident_ctas = 1}}]

[[kernels]]
name = "broken"
file = "{small}"
kernel = "saxpy"
grid = 4
args = ["f32:2.0", "rand:float32:8", "rand:float32:8", "i32:512"]
"""


def test_a_toml_spec_on_the_command_line(tmp_path, capsys):
    spec = tmp_path / "farm.toml"
    spec.write_text(SPEC.format(small=SMALL))
    out = tmp_path / "results.json"
    assert main(["farm", str(spec), "--json", str(out), "--no-progress"]) == 1
    data = json.loads(out.read_text())
    assert data["ok"] == 6 and data["failed"] == 1 and data["workers"] == 2
    rows = data["results"]
    assert [r["shape"] for r in rows[:6]] == [{"n": 100}] * 2 + [{"n": 1000}] * 2 + \
        [{"n": 300}] * 2
    assert rows[1]["options"] == {"max_resident_ctas": 1}
    assert rows[6]["name"] == "broken" and rows[6]["error_type"] == "MemoryAccessError"
    tasks = expand_spec(load_spec(spec), tmp_path)
    assert tasks[2].grid == 8 and tasks[0].grid == 1
    for r in rows[:6]:
        assert r["outputs"]["arg2"] == want_digest(tasks[r["index"]])
    # both option sets give the same bits
    assert rows[0]["outputs"] == rows[1]["outputs"]
    shown = capsys.readouterr().out
    assert "6 ok, 1 failed" in shown and "MemoryAccessError" in shown


def test_a_json_spec_through_the_api(tmp_path):
    spec = {"kernels": [{"file": str(SMALL), "kernel": "saxpy", "block": 64, "grid": "{n}//64",
                         "args": ["f32:1.0", "rand:float32:{n}", "rand:float32:{n}", "i32:{n}"],
                         "shapes": [{"n": 128}, {"n": 256}]}]}
    path = tmp_path / "farm.json"
    path.write_text(json.dumps(spec))
    report = ptxsim.farm(path, workers=1, progress=False)
    assert [r.ok for r in report.results] == [True, True]
    assert json.loads(report.to_json())["ok"] == 2


@pytest.mark.parametrize("spec,match", [
    ({"kernels": []}, "non-empty list"),
    ({"kernelz": []}, "unknown key 'kernelz'"),
    ({"kernels": [{"kernel": "saxpy"}]}, "exactly one of 'file'"),
    ({"kernels": [{"file": "nothere.ptx"}]}, r"kernels\[0\].file: 'nothere.ptx' is not a file"),
    ({"kernels": [{"file": str(SMALL), "grid": "{m}"}]}, "'m' is not a name of the shape"),
    ({"kernels": [{"file": str(SMALL), "grid": "__import__('os')"}]}, "not an integer expr"),
    ({"kernels": [{"file": str(SMALL), "gird": 2}]}, r"kernels\[0\]: unknown key 'gird'"),
    ({"kernels": [{"file": str(SMALL), "shapes": [{"n": "x"}]}]}, "table of integers"),
])
def test_bad_specs_are_named(spec, match):
    with pytest.raises(FarmSpecError, match=match):
        expand_spec(spec, Path("."))


def test_bad_spec_files_are_named(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("workers = [")
    with pytest.raises(FarmSpecError, match="not valid TOML"):
        load_spec(p)
    with pytest.raises(FarmSpecError, match="cannot read"):
        load_spec(tmp_path / "missing.json")
    assert main(["farm", str(p)]) == 1


def test_warnings_are_findings_and_unknown_options_are_named_rows():
    tasks = [Task(SMALL, "read_clock", grid=4, block=32, args=["zeros:uint64:4"],
                  options={"workers": 2, "max_resident_ctas": 1}),
             Task(SMALL, "same", grid=1, block=32, args=["zeros:uint32:4"],
                  options={"colour": "red"})]
    report = farm(tasks, workers=1, progress=False)
    first, second = report.results
    assert first.ok and len(first.findings) == 1
    assert first.findings[0].startswith("OneWorkerWarning: this launch runs in one worker: line ")
    assert second.error_type == "OperandError" and "launch option 'colour'" in second.error


def test_sanitize_modes_become_a_launch_option_axis():
    spec = {"kernels": [{"file": str(SMALL), "kernel": "same", "args": ["zeros:uint32:4"],
                         "sanitize": ["none", "full"], "shapes": [{"n": 1}, {"n": 2}]}]}
    tasks = expand_spec(spec, Path("."))
    assert [(t.shape["n"], t.options, t.seed) for t in tasks] == [
        (1, {"sanitize": "none"}, 0), (1, {"sanitize": "full"}, 0),
        (2, {"sanitize": "none"}, 1), (2, {"sanitize": "full"}, 1)]


def test_a_farm_task_may_split_its_own_launch_over_workers():
    tasks = saxpy_tasks(3)
    for t in tasks:
        t.options = {"workers": 2, "max_resident_ctas": 1}
    report = farm(tasks, workers=2, progress=False)
    assert all(r.ok for r in report.results), [r.error for r in report.results]
    assert all(r.outputs["arg2"] == want_digest(t) for r, t in zip(report.results, tasks))
