"""`ptxsim run --workers N` / `--ray ADDRESS`."""
from pathlib import Path

import numpy as np

from ptxsim.cli import main

SMALL = Path(__file__).parent / "data" / "small.ptx"


def test_run_with_two_workers(tmp_path, capsys):
    x = np.arange(1000, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    rc = main(["run", str(SMALL), "--kernel", "saxpy", "--grid", "8", "--block", "128",
               "--max-resident-ctas", "2", "--workers", "2", "--arg", "f32:3.0",
               "--arg", str(tmp_path / "x.npy"), "--arg", "zeros:float32:1000",
               "--arg", "i32:1000", "--out", str(tmp_path / "o")])
    assert rc == 0
    assert "2 workers (local)" in capsys.readouterr().out
    assert np.array_equal(np.load(tmp_path / "o" / "arg2.npy"), 3 * x)


def test_a_merge_conflict_on_the_command_line(capsys):
    args = ["run", str(SMALL), "--kernel", "race", "--grid", "4", "--block", "32",
            "--max-resident-ctas", "2", "--workers", "2", "--arg", "zeros:uint32:4"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "MergeConflict" in err and "both wrote byte 0 of global buffer 'param0'" in err
    assert main(args + ["--allow-order-dependent"]) == 0


def test_ray_without_ray_installed_is_named(monkeypatch, capsys):
    import sys
    monkeypatch.setitem(sys.modules, "ray", None)          # import ray -> ImportError
    rc = main(["run", str(SMALL), "--kernel", "same", "--grid", "4", "--block", "32",
               "--max-resident-ctas", "2", "--ray", "local", "--arg", "zeros:uint32:4"])
    assert rc == 1
    assert "pip install 'ptxsim[ray]'" in capsys.readouterr().err
