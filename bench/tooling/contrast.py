"""Contrast ratios (WCAG 2.1, relative luminance) of the app's colours against the backgrounds
they sit on: the theme's (``viz_transformer/ui/theme.py``, ``.streamlit/config.toml``) beside
Streamlit 1.67's defaults that they replace (as measured in Chromium's computed styles). The
numbers docs/accessibility.md gives. ``python -m bench.tooling.contrast``."""

from __future__ import annotations

import tomllib
from pathlib import Path

from viz_transformer.ui.theme import BOUNDARY, FOCUS, MUTED

ROOT = Path(__file__).resolve().parents[2]
WHITE, SIDEBAR, FIELD = "#ffffff", "#f8f8f7", "#f1f0ee"  # page, sidebar, a text field
TEXT = "#2f2d2b"  # Streamlit's text colour
STREAMLIT_PRIMARY = "#c53948"


def rgb(colour: str) -> tuple[float, float, float]:
    """``#rrggbb`` as three channels 0-255."""
    c = colour.lstrip("#")
    return float(int(c[0:2], 16)), float(int(c[2:4], 16)), float(int(c[4:6], 16))


def over(colour: str, alpha: float, behind: str) -> str:
    """``colour`` at opacity ``alpha`` composited over ``behind``, as ``#rrggbb``."""
    mixed = [alpha * f + (1 - alpha) * b for f, b in zip(rgb(colour), rgb(behind), strict=True)]
    return "#" + "".join(f"{round(v):02x}" for v in mixed)


def luminance(colour: str) -> float:
    """WCAG 2.1's relative luminance of an sRGB colour."""
    lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in
           (c / 255 for c in rgb(colour))]  # fmt: skip
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def ratio(a: str, b: str) -> float:
    """The contrast ratio of two colours, 1 to 21."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def rows() -> list[tuple[str, str, float, float]]:
    """(what, needed, Streamlit's default, this app) for each measured pair."""
    primary = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"][
        "primaryColor"
    ]
    chip = over(primary, 0.1, WHITE)  # a selected chip: primary text on a 10% primary tint
    return [
        ("caption on the page", "4.5", ratio(over(TEXT, 0.6, WHITE), WHITE), ratio(MUTED, WHITE)),
        ("caption in the sidebar", "4.5", ratio(over(TEXT, 0.6, SIDEBAR), SIDEBAR),
         ratio(MUTED, SIDEBAR)),
        ("chart tick label", "4.5", ratio("#808495", WHITE), ratio(MUTED, WHITE)),
        ("selected chip", "4.5", ratio(STREAMLIT_PRIMARY, over(STREAMLIT_PRIMARY, 0.1, WHITE)),
         ratio(primary, chip)),
        ("text field edge", "3", ratio(over(TEXT, 0.2, WHITE), WHITE), ratio(BOUNDARY, WHITE)),
        ("switch track, off", "3", ratio(over(TEXT, 0.2, WHITE), WHITE), ratio(BOUNDARY, WHITE)),
        ("focus ring on the page", "3", 0.0, ratio(FOCUS, WHITE)),
        ("focus ring in the sidebar", "3", 0.0, ratio(FOCUS, SIDEBAR)),
    ]  # fmt: skip


def main() -> None:
    print("| what | needed | Streamlit's default | this app |\n|---|---|---|---|")
    for what, needed, before, after in rows():
        was = "no ring, a faint tint" if before == 0 else f"{before:.2f}:1"
        print(f"| {what} | {needed}:1 | {was} | {after:.2f}:1 |")


if __name__ == "__main__":
    main()
