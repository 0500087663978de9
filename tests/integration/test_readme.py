"""Every ```python block of the README runs as written: each in a fresh interpreter from the
repository root, offline, on one thread, as a newcomer would paste it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def readme_blocks() -> list[str]:
    """The source of each ```python block of README.md, in order."""
    return BLOCK.findall((ROOT / "README.md").read_text(encoding="utf-8"))


def test_the_readme_has_python_blocks():
    assert readme_blocks(), "README.md has no ```python block: the library example is gone"


@pytest.mark.parametrize("index", range(len(readme_blocks())))
def test_readme_python_block_runs_as_written(index):
    code = readme_blocks()[index]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, f"README block {index + 1} raised:\n{code}\n{run.stderr[-3000:]}"
