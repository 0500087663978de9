"""What every figure shares: escaped token labels, the colour scale and text scaled for a
projector."""

from __future__ import annotations

import html
import re

import plotly.graph_objects as go

COLORSCALE = "Blues"
# series told apart without colour (WCAG 1.4.1): the i-th series of a chart gets the i-th dash and
# marker, so a reader who cannot tell the colours apart (or prints in grey) still can
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross", "triangle-down")


def series_style(i: int, markers: int = 12) -> dict:
    """``go.Scatter`` arguments that set series ``i`` apart by its dash and marker shape (at
    most ``markers`` markers drawn along a line): ``go.Scatter(..., **series_style(i))``."""
    return {
        "mode": "lines+markers",
        "line": {"dash": DASHES[i % len(DASHES)]},
        "marker": {"symbol": SYMBOLS[i % len(SYMBOLS)], "size": 7, "maxdisplayed": markers},
    }


def labels(tokens: tuple[str, ...] | list[str]) -> list[str]:
    """Escaped display labels; markup in user text is shown literally, never rendered."""
    return [html.escape(t, quote=False) for t in tokens]


# plotly.js defaults of the sizes a figure leaves unset (layout font, title, hover labels)
_DEFAULT_SIZES = {"font": 12, "title": 17, "hoverlabel": 13}
TITLE_CHARS = 72  # characters of a 17 px title that fit a 660 px wide chart (1024 px screen)
_AXIS = re.compile(r"^(x|y)axis\d*$|^(polar|scene|ternary)\d*$")


def _scale_sizes(node: object, factor: float) -> None:
    """Multiply, in place, every ``size`` of every font dict under ``node`` (plotly JSON)."""
    if isinstance(node, list):
        for item in node:
            _scale_sizes(item, factor)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key.endswith("font") and isinstance(value, dict) and "size" in value:
                value["size"] = round(value["size"] * factor, 1)
            else:
                _scale_sizes(value, factor)


def _font(holder: dict, key: str, size: float) -> None:
    """Give ``holder[key]`` (a font dict, created if needed) ``size`` unless it has one."""
    holder.setdefault(key, {}).setdefault("size", round(size, 1))


def _title_font(holder: dict, size: float) -> None:
    title = holder.setdefault("title", {})
    if isinstance(title, str):  # a title given as bare text
        title = holder["title"] = {"text": title}
    _font(title, "font", size)


def scaled_fonts(fig: go.Figure, factor: float) -> go.Figure:
    """A copy of ``fig`` with every text ``factor`` times larger (presenter mode).

    Explicit sizes (tick labels, colour bars, annotations, legends, subplot titles) are
    multiplied; where a size is unset, ``factor`` times plotly's default is written out
    explicitly (Streamlit's chart theme would otherwise set its own): the layout font, titles,
    hover labels, every axis's tick labels and title, legends, colour bars and numbers written
    in cells. Margins grow to
    fit the larger labels (``automargin``) and the figure's height by the same factor.
    """
    data = fig.to_plotly_json()
    _scale_sizes(data, factor)
    layout = data.setdefault("layout", {})
    _font(layout, "font", _DEFAULT_SIZES["font"] * factor)
    _title_font(layout, _DEFAULT_SIZES["title"] * factor)
    _font(layout.setdefault("hoverlabel", {}), "font", _DEFAULT_SIZES["hoverlabel"] * factor)
    _font(layout.setdefault("legend", {}), "font", 12 * factor)
    for key in [k for k in layout if _AXIS.match(k)] or ["xaxis", "yaxis"]:
        axis = layout.setdefault(key, {})
        _font(axis, "tickfont", 12 * factor)
        _title_font(axis, 14 * factor)
        axis["automargin"] = True
    for annotation in layout.get("annotations", []):
        _font(annotation, "font", 12 * factor)
    for trace in data.get("data", []):
        if "colorbar" in trace or trace.get("type") in ("heatmap", "contour", "histogram2d"):
            bar = trace.setdefault("colorbar", {})
            _font(bar, "tickfont", 12 * factor)
            _title_font(bar, 12 * factor)
        if trace.get("texttemplate"):
            _font(trace, "textfont", 12 * factor)  # numbers in cells grow with the ticks
    title = layout["title"]
    lines = 1
    if title.get("text"):
        title["text"], lines = wrap_title(title["text"], round(TITLE_CHARS / factor))
    out = go.Figure(data)
    if layout.get("height"):
        out.update_layout(height=round(layout["height"] * factor))
    top = (out.layout.margin.t or 80) + (factor - 1) * 40 + (lines - 1) * title["font"]["size"]
    return out.update_layout(margin_t=round(top))


def wrap_title(text: str, width: int) -> tuple[str, int]:
    """``text``'s first line (before any ``<br>``) broken at spaces into lines of at most
    ``width`` characters, so a large title is not cut at the figure's edge; returns the text and
    the number of lines its first line became."""
    head, sep, rest = text.partition("<br>")
    lines: list[str] = []
    for word in head.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    wrapped = "<br>".join(lines) + sep + rest
    return wrapped, len(lines)


def title_outside(fig: go.Figure, chars: int) -> tuple[go.Figure, str | None]:
    """``(fig, None)`` when its title's first line fits ``chars`` characters; else a copy
    without the title and the title as plain text (subtitle after a dash), for the page to set
    above the chart, where it wraps at the chart's real width (plotly neither wraps a title nor
    places one of several lines reliably)."""
    text = fig.layout.title.text or ""
    head, _, rest = text.partition("<br>")
    if len(head) <= chars:
        return fig, None
    plain = html.unescape(re.sub(r"<[^>]+>", "", head))
    if rest:
        plain += " — " + html.unescape(re.sub(r"<[^>]+>", " ", rest)).strip()
    # the title it had stays in ``meta`` (plotly does not draw it): tests and readers of the
    # figure's JSON still find what the chart is
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    moved = go.Figure(fig).update_layout(title_text=None, margin_t=30, meta={**meta, "title": text})
    return moved, plain
