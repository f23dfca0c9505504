"""The README's first command, exactly as written, in a new virtual environment (slow: installs from the registry)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def first_command():
    block = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)[0]
    return block.strip()


@pytest.mark.slow
def test_readme_first_command_in_a_fresh_environment(tmp_path):
    command = first_command()
    assert command.startswith("pip install") and "--plot" in command
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", "build", "*.png"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    res = subprocess.run(["bash", "-c", command], cwd=checkout, env=env, capture_output=True, text=True, timeout=1500)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "support: [0.0857864376269050, 2.91421356237310]" in res.stdout
    assert "moments: 1.00000000000000, 1.50000000000000, 2.75000000000000, 5.62500000000000" in res.stdout
    picture = checkout / "marchenko-pastur.png"
    assert picture.stat().st_size > 10000 and picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Traceback" not in res.stderr
