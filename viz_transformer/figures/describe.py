"""Every chart in words and numbers, read from the figure itself: a short accessible name, a
description of what it shows with its strongest values (for a head map: which token attends most
to which, and how much), and the drawn values as a table. The chart widget gives these to every
figure, so a reader who cannot see the colours, or uses no mouse, gets what the chart says.

Pure functions of a plotly figure (its traces' arrays and its axes' tick labels): no page,
no model.
"""

from __future__ import annotations

import base64
import html
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

TOP = 3  # strongest values named in a description
SERIES = 6  # series named one by one; the rest are counted
_TAGS = re.compile(r"<[^>]+>")


def plain(text: object) -> str:
    """Plotly text (HTML-escaped, ``<br>``, ``<sup>``) as plain words on one line."""
    return " ".join(html.unescape(_TAGS.sub(" ", str(text or ""))).split())


def _num(value: float) -> str:
    """A value as a description says it: 3 significant digits, no exponent for usual sizes."""
    if not np.isfinite(value):
        return "none"
    if float(value).is_integer() and abs(value) < 1e5:
        return str(int(value))
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:.2e}"
    return f"{value:.3g}" if abs(value) >= 1 else f"{value:.3f}"


def _array(value: object) -> np.ndarray:
    """A trace's array as floats, also one in plotly's JSON form (``{"dtype", "bdata", "shape"}``,
    as a figure read back from its JSON holds it)."""
    if isinstance(value, dict) and "bdata" in value:
        raw = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = value.get("shape")
        return raw.reshape([int(s) for s in str(shape).split(",")]) if shape else raw
    return np.asarray(value if value is not None else [], dtype=float)


def _numeric(value: object) -> bool:
    try:
        _array(value)
    except (TypeError, ValueError):
        return False
    return True


def chart_name(fig: go.Figure, fallback: str) -> str:
    """The chart's accessible name: its title's first line (also one moved out of the figure,
    kept in ``meta``), else ``fallback`` (the file stem, ``attention-cross-L1-H0``) in words."""
    meta = fig.layout.meta
    title = fig.layout.title.text or (meta.get("title") if isinstance(meta, dict) else None)
    if title:
        return plain(str(title).split("<br>")[0])
    return " ".join(re.split(r"[-_]+", fallback)).strip() or "chart"


def _axis(fig: go.Figure, trace: go.BaseTraceType, letter: str) -> dict:
    """The layout axis a trace is drawn on (``xaxis``, ``yaxis2``, ...), as plotly JSON."""
    ref = getattr(trace, f"{letter}axis", None) or letter
    name = f"{letter}axis{ref[1:]}"
    return fig.layout[name].to_plotly_json() if name in fig.layout else {}


def _coords(trace: go.BaseTraceType, letter: str, n: int) -> list[float]:
    """Where a heatmap's ``n`` rows (``y``) or columns (``x``) sit on their axis."""
    given = getattr(trace, letter)
    if isinstance(given, dict):
        given = _array(given).tolist()
    if given is not None and len(given) == n:
        return list(given)
    start, step = getattr(trace, f"{letter}0"), getattr(trace, f"d{letter}")
    return [(start or 0) + (step if step is not None else 1) * i for i in range(n)]


def _say(label: str | float) -> str:
    return label if isinstance(label, str) else _num(label)


def axis_labels(fig: go.Figure, trace: go.BaseTraceType, letter: str, n: int) -> list[str | float]:
    """The labels of ``n`` positions of ``trace`` along ``letter`` (``x``/``y``): the axis's tick
    text where a tick sits there (tokens on a map), else the coordinate itself (a number stays a
    number); repeated labels get their position added, so every row and column of a table
    stays apart."""
    ticks = _axis(fig, trace, letter)
    named = dict(zip(ticks.get("tickvals") or (), ticks.get("ticktext") or (), strict=False))
    out: list[str | float] = []
    for c in _coords(trace, letter, n):
        label = named.get(c)
        if label is not None or isinstance(c, str):
            out.append(plain(label if label is not None else c))
        else:
            out.append(float(c))
    seen = Counter(out)
    return [
        f"{label} ({i})" if isinstance(label, str) and seen[label] > 1 else label
        for i, label in enumerate(out)
    ]


def _title(axis: dict) -> str:
    title = axis.get("title") or {}
    return plain(title.get("text") if isinstance(title, dict) else title)


def _heatmap(fig: go.Figure, trace: go.Heatmap) -> tuple[str, pd.DataFrame]:
    z = _array(trace.z).astype(float)
    z = z.reshape(1, -1) if z.ndim == 1 else z
    rows = axis_labels(fig, trace, "y", z.shape[0])
    cols = axis_labels(fig, trace, "x", z.shape[1])
    table = pd.DataFrame(z, index=pd.Index(rows), columns=pd.Index(cols))
    x_title, y_title = _title(_axis(fig, trace, "x")), _title(_axis(fig, trace, "y"))
    shape = f"{z.shape[0]} rows" + (f" ({y_title})" if y_title else "")
    shape += f" by {z.shape[1]} columns" + (f" ({x_title})" if x_title else "")
    if not np.isfinite(z).any():
        return f"A map of {shape}, every cell empty.", table
    filled = np.where(np.isfinite(z), z, -np.inf)
    best = filled.argmax(axis=1)
    tops = [
        r
        for r in np.argsort(-filled.max(axis=1), kind="stable")[:TOP]
        if np.isfinite(filled[r, best[r]])
    ]
    attends = "key" in x_title.lower() or "attend" in x_title.lower()
    verb = "attends most to" if attends else "is highest at"
    said = "; ".join(
        f"‘{_say(rows[r])}’ {verb} ‘{_say(cols[best[r]])}’ ({_num(z[r, best[r]])})" for r in tops
    )
    text = (
        f"A map of {shape}, values from {_num(np.nanmin(z))} to {_num(np.nanmax(z))}. "
        f"Strongest rows: {said}."
    )
    return text, table


def _series(fig: go.Figure, trace: go.BaseTraceType, i: int) -> tuple[str, pd.DataFrame]:
    """A line, scatter or bar series: its points as a table and its extremes in words."""
    name = plain(trace.name) or f"series {i + 1}"
    horizontal = getattr(trace, "orientation", None) == "h"
    if not horizontal and trace.y is not None and not _numeric(trace.y):
        horizontal = True  # points placed by a number along x on a row of names (heads)
    along, value = ("y", "x") if horizontal else ("x", "y")
    if getattr(trace, value) is None:  # a bare ``y`` (or ``x``) is drawn at 0, 1, 2, ...
        along, value = value, along
    values = _array(getattr(trace, value)).astype(float)
    where = axis_labels(fig, trace, along, len(values))
    table = pd.DataFrame(
        {
            "series": name,
            _title(_axis(fig, trace, along)) or along: where,
            _title(_axis(fig, trace, value)) or value: values,
        }
    )
    finite = np.isfinite(values)
    if not finite.any():
        return f"‘{name}’: no values", table
    hi, lo = int(np.nanargmax(values)), int(np.nanargmin(values))
    return (
        f"‘{name}’ highest {_num(values[hi])} at {_say(where[hi])}, "
        f"lowest {_num(values[lo])} at {_say(where[lo])}",
        table,
    )


def _histogram(trace: go.Histogram, i: int) -> tuple[str, pd.DataFrame]:
    values = _array(trace.x if trace.x is not None else trace.y).astype(float)
    name = plain(trace.name) or f"series {i + 1}"
    counts, edges = np.histogram(values[np.isfinite(values)], bins=trace.nbinsx or 20)
    table = pd.DataFrame({"series": name, "from": edges[:-1], "to": edges[1:], "count": counts})
    text = (
        f"‘{name}’: {len(values)} values from {_num(np.nanmin(values))} to "
        f"{_num(np.nanmax(values))}, median {_num(np.nanmedian(values))}"
    )
    return text, table


def _table(trace: go.Table) -> tuple[str, pd.DataFrame]:
    header = [plain(h) for h in (trace.header.values or ())]
    cells = [[plain(v) for v in column] for column in (trace.cells.values or ())]
    table = pd.DataFrame(dict(zip(header, cells, strict=False)))
    return f"A table of {len(table)} rows with columns {', '.join(header)}", table


def _parts(fig: go.Figure) -> list[tuple[str, str, pd.DataFrame]]:
    """(kind, words, table) of every trace that draws values."""
    parts = []
    for i, trace in enumerate(fig.data):
        try:
            part = _part(fig, trace, i)
        except (TypeError, ValueError):  # values that are not numbers: named, not described
            name = plain(getattr(trace, "name", None)) or f"series {i + 1}"
            part = ("values", f"‘{name}’ not described in words", pd.DataFrame())
        if part:
            parts.append(part)
    return parts


def _part(fig: go.Figure, trace: go.BaseTraceType, i: int) -> tuple[str, str, pd.DataFrame] | None:
    """(kind, words, table) of one trace; None for one that draws no values."""
    if isinstance(trace, go.Heatmap) and trace.z is not None:
        return ("map", *_heatmap(fig, trace))
    if isinstance(trace, go.Histogram):
        return ("histogram", *_histogram(trace, i))
    if isinstance(trace, go.Table):
        return ("table", *_table(trace))
    if getattr(trace, "mode", None) == "text":  # labels drawn as text, no values
        return None
    if isinstance(trace, (go.Scatter, go.Scattergl, go.Bar)) and (
        trace.y is not None or trace.x is not None
    ):
        points = "lines" if "lines" in (getattr(trace, "mode", None) or "lines") else "points"
        return ("bars" if isinstance(trace, go.Bar) else points, *_series(fig, trace, i))
    return None


def _given(fig: go.Figure) -> dict:
    """What a figure says of itself in ``layout.meta`` (a figure whose traces are not its values,
    such as the head view's line segments): ``description`` and ``values`` (columns, rows)."""
    meta = fig.layout.meta
    return meta if isinstance(meta, dict) else {}


def describe(fig: go.Figure) -> str:
    """What ``fig`` shows in words: each map's size, range and strongest rows; each series'
    highest and lowest point (the first ``SERIES``, then how many more); or the description
    the figure gives in ``layout.meta``."""
    if _given(fig).get("description"):
        return str(_given(fig)["description"])
    parts = _parts(fig)
    if not parts:
        return "An empty chart."
    maps = [words for kind, words, _ in parts if kind in ("map", "table")]
    series = [(kind, words) for kind, words, _ in parts if kind not in ("map", "table")]
    out = list(maps)
    if series:
        kinds = sorted({kind for kind, _ in series})
        head = (
            f"{len(series)} series of {' and '.join(kinds)}"
            if len(series) > 1
            else kinds[0].capitalize()
        )
        named = "; ".join(words for _, words in series[:SERIES])
        more = f"; and {len(series) - SERIES} more" if len(series) > SERIES else ""
        out.append(f"{head}: {named}{more}.")
    return " ".join(out)


def _long(matrix: pd.DataFrame) -> pd.DataFrame:
    """A map's matrix as one row per cell: ``row``, ``column``, ``value``."""
    cells = matrix.stack(future_stack=True).rename("value")
    return cells.rename_axis(["row", "column"]).reset_index()


def drawn_values(fig: go.Figure) -> pd.DataFrame:
    """The values ``fig`` draws as one table: a single map as its matrix (rows and columns by
    their labels), several series side by side (``series``, position, value), several maps one
    after the other with a ``map`` column; or the values the figure gives in ``layout.meta``."""
    values = _given(fig).get("values")
    if values:
        return pd.DataFrame(values["rows"], columns=values["columns"])
    parts = _parts(fig)
    if not parts:
        return pd.DataFrame()
    if len(parts) == 1:
        return parts[0][2]
    tables: Sequence[pd.DataFrame] = [
        _long(t).assign(map=i + 1) if kind == "map" else t for i, (kind, _, t) in enumerate(parts)
    ]
    return pd.concat(tables, ignore_index=True)
