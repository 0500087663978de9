"""Size limits that keep every file readable in one sitting (docs/architecture.md): a page file
(``pages/*.py``) draws one page from sections and ``ui/`` helpers, at most 90 lines; a ``ui/``
module at most 160; every other module (``pages/sections/`` and ``app.py`` included) at most 350.
A file past its limit is split by responsibility, not by size."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE_LINES, UI_LINES, MODULE_LINES = 90, 160, 350


def limit(path: Path) -> int:
    """The most lines ``path`` (a .py file of the repository) may have."""
    parts = path.relative_to(ROOT).parts
    if parts[0] == "pages" and len(parts) == 2:
        return PAGE_LINES
    if parts[:2] == ("viz_transformer", "ui"):
        return UI_LINES
    return MODULE_LINES


FILES = sorted(
    [*ROOT.glob("viz_transformer/**/*.py"), *ROOT.glob("pages/**/*.py"), ROOT / "app.py"]
)


def test_the_limits_are_the_documented_ones() -> None:
    assert limit(ROOT / "pages" / "attention.py") == 90
    assert limit(ROOT / "pages" / "sections" / "x.py") == 350
    assert limit(ROOT / "viz_transformer" / "ui" / "x.py") == 160
    assert limit(ROOT / "viz_transformer" / "ui" / "sub" / "x.py") == 160
    assert limit(ROOT / "app.py") == limit(ROOT / "viz_transformer" / "models" / "x.py") == 350
    assert len(FILES) > 100 and ROOT / "app.py" in FILES


def test_every_file_is_within_its_limit() -> None:
    over = [
        f"{path.relative_to(ROOT)}: {n} lines, limit {limit(path)}"
        for path in FILES
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit(path)
    ]
    listing = "\n".join(over)
    assert not over, f"split by responsibility (docs/architecture.md, 'Size limits'):\n{listing}"
