import subprocess
import sys

from ptxsim.cli import main


def test_help_lists_program(capsys):
    assert main([]) == 0
    assert "ptxsim" in capsys.readouterr().out


def test_python_dash_m_runs():
    out = subprocess.run([sys.executable, "-m", "ptxsim", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("ptxsim ")
