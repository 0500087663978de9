"""What every figure shares: escaped token labels and the colour scale."""

from __future__ import annotations

import html

COLORSCALE = "Blues"


def labels(tokens: tuple[str, ...] | list[str]) -> list[str]:
    """Escaped display labels; markup in user text is shown literally, never rendered."""
    return [html.escape(t, quote=False) for t in tokens]
