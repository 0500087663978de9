"""Size limits that keep every file readable in one sitting (docs/architecture.md): a page file
(``pages/*.py``) draws one page from sections and ``ui/`` helpers, at most 90 lines; a ``ui/``
module at most 160; every other module (``pages/sections/``, ``app.py``, the benchmarks in
``bench/`` and the tests in ``tests/`` included) at most 350.
A file past its limit is split by responsibility, not by size.

A file is measured as ``ruff format`` writes it without its ``# fmt: skip`` markers, so lines
packed by hand under a marker count as the lines they would be: a marker keeps a table readable,
it buys no room. Every file goes through one ``ruff format`` call, on copies in a temporary folder
(about 0.2 s)."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE_LINES, UI_LINES, MODULE_LINES = 90, 160, 350
MARKER = re.compile(r"[ \t]*# fmt: skip[ \t]*$", re.MULTILINE)

pytestmark = pytest.mark.needs("ruff")


def limit(path: Path) -> int:
    """The most lines ``path`` (a .py file of the repository) may have."""
    parts = path.relative_to(ROOT).parts
    if parts[0] == "pages" and len(parts) == 2:
        return PAGE_LINES
    if parts[:2] == ("viz_transformer", "ui"):
        return UI_LINES
    return MODULE_LINES


FILES = sorted(
    [
        *ROOT.glob("viz_transformer/**/*.py"),
        *ROOT.glob("pages/**/*.py"),
        ROOT / "app.py",
        *ROOT.glob("bench/**/*.py"),
        *ROOT.glob("tests/**/*.py"),
    ]
)


def formatted_lines(sources: dict[Path, str]) -> dict[Path, int]:
    """How many lines each source (keyed by its path in the repository) has once its
    ``# fmt: skip`` markers are removed and ``ruff format`` has written it with the repository's
    settings (``pyproject.toml``)."""
    with tempfile.TemporaryDirectory(prefix="vt-sizes-") as folder:
        copies = {path: Path(folder) / path.relative_to(ROOT) for path in sources}
        for path, copy in copies.items():
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(MARKER.sub("", sources[path]), encoding="utf-8")
        config = ["--config", str(ROOT / "pyproject.toml")]
        command = [sys.executable, "-m", "ruff", "format", "--no-cache", "--quiet", *config]
        done = subprocess.run([*command, folder], capture_output=True, text=True)
        assert done.returncode == 0, f"ruff format failed:\n{done.stderr}"
        return {path: len(copy.read_text("utf-8").splitlines()) for path, copy in copies.items()}


def over_limit(sources: dict[Path, str]) -> list[str]:
    """One line per source whose formatted length passes its limit."""
    return [
        f"{path.relative_to(ROOT)}: {n} lines formatted, limit {limit(path)}"
        for path, n in formatted_lines(sources).items()
        if n > limit(path)
    ]


def test_the_limits_are_the_documented_ones() -> None:
    assert limit(ROOT / "pages" / "attention.py") == 90
    assert limit(ROOT / "pages" / "sections" / "x.py") == 350
    assert limit(ROOT / "viz_transformer" / "ui" / "x.py") == 160
    assert limit(ROOT / "viz_transformer" / "ui" / "sub" / "x.py") == 160
    assert limit(ROOT / "app.py") == limit(ROOT / "viz_transformer" / "models" / "x.py") == 350
    assert limit(ROOT / "bench" / "bench_capture.py") == limit(ROOT / "tests" / "x.py") == 350
    assert len(FILES) > 300 and ROOT / "app.py" in FILES
    assert ROOT / "bench" / "bench_capture.py" in FILES and Path(__file__) in FILES


def test_lines_packed_under_markers_count_as_ruff_format_writes_them() -> None:
    # 50 calls packed on two lines each under a marker: 100 lines as written, but ruff format
    # writes each argument on its own line (10 lines a call)
    call = (
        "settings_{i} = dict(alpha_value=1, beta_value=2, gamma_value=3, delta_value=4,\n"
        "                   epsilon_value=5, zeta_value=6, eta_value=7, theta_value=8)"
        "  # fmt: skip\n"
    )
    packed = "".join(call.format(i=i) for i in range(50))
    module = ROOT / "viz_transformer" / "models" / "packed.py"
    page = ROOT / "pages" / "packed.py"
    assert len(packed.splitlines()) == 100
    assert formatted_lines({module: packed, page: "x = 1  # fmt: skip\n"}) == {module: 500, page: 1}
    assert over_limit({module: packed, page: "x = 1\n"}) == [
        "viz_transformer/models/packed.py: 500 lines formatted, limit 350"
    ]


def test_every_file_is_within_its_limit() -> None:
    over = over_limit({path: path.read_text(encoding="utf-8") for path in FILES})
    listing = "\n".join(over)
    assert not over, f"split by responsibility (docs/architecture.md, 'Size limits'):\n{listing}"
