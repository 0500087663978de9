"""Figure export without a browser: the format and the fix named when something is missing."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from viz_transformer.ui import figure_export as export


@pytest.mark.needs("kaleido")  # without it, export names kaleido first
def test_no_browser_says_how_to_install_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    assert export.browser_path() is None
    problem = export.export_problem()
    assert problem is not None and "apt-get install chromium" in problem
    with pytest.raises(RuntimeError, match="apt-get install chromium"):
        export.figure_bytes(go.Figure(), "svg")


def test_a_browser_path_that_is_not_a_file_counts_as_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    assert export.browser_path() is None


def test_unknown_format_is_refused_before_any_browser_starts() -> None:
    with pytest.raises(ValueError, match="svg, pdf, png"):
        export.figure_bytes(go.Figure(), "jpeg")  # type: ignore[arg-type]
