"""``need`` (tests/conftest.py): a test of a missing optional part skips and names its install
line; under CI (``CI=true`` or ``--require-optional``) it fails, since CI installs every part.
Each case runs pytest in a subprocess (3 s each on a quiet machine), hence this tier, not unit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# a part no machine has, and one every machine has (the standard library's json)
GHOST = """
OPTIONAL["ghost"] = ("vt_no_such_module", "pip install vt-ghost==1.0")
OPTIONAL["here"] = ("json", "python3 comes with it")
"""
TESTS = """
import pytest


@pytest.fixture
def ghost(need):
    need("ghost")


@pytest.mark.needs("ghost")
def test_marked():
    pass


def test_by_fixture(ghost):
    pass


def test_in_the_body(need):
    need("ghost")


@pytest.mark.needs("here")
def test_present():
    pass
"""


def _run(tmp_path: Path, *args: str, ci: str = "") -> str:
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text() + GHOST)
    (tmp_path / "test_ghost.py").write_text(TESTS)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "CI": ci, "PYTEST_ADDOPTS": ""}
    cmd = [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", *args, str(tmp_path)]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return done.stdout


@pytest.mark.slow
def test_a_missing_part_skips_with_its_install_line(tmp_path):
    out = _run(tmp_path)
    assert "1 passed, 3 skipped" in out
    assert "needs ghost (pip install vt-ghost==1.0)" in out


@pytest.mark.slow
@pytest.mark.parametrize(("flag", "ci"), [("--require-optional", ""), ("-q", "true")])
def test_under_ci_a_missing_part_fails(tmp_path, flag, ci):
    out = _run(tmp_path, flag, ci=ci)
    assert "1 failed, 1 passed, 2 errors" in out  # a marker or a fixture fails in setup
    assert "CI installs every optional part; this machine lacks ghost" in out


def test_every_install_line_names_a_pinned_requirement(optional_parts):
    pins = "".join(p.read_text() for p in ROOT.glob("requirements*.txt"))
    for part, (_, line) in optional_parts.items():
        for spec in re.findall(r"[\w.-]+(?:\[[\w,]+\])?==[\w.]+", line):  # extras too
            assert re.search(rf"^{re.escape(spec)}\b", pins, re.M), f"{part}: {spec} not pinned"
        if "-r " in line:
            assert (ROOT / line.split("-r ")[1]).is_file(), part
