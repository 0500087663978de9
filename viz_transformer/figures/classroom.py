"""The Teacher page's figures: the funnel (per step of a lesson, how many students reached it,
answered it and answered it right) and the QR code of the students' link."""

from __future__ import annotations

import io

import pandas as pd
import plotly.graph_objects as go
import segno

from viz_transformer.figures.common import labels

# the counts' font (x 1.6 in presenter: 23.2 px, digits of 14.5 px of ink), for <= 12 steps,
# in the theme's text colour (12.6:1 on white; plotly's grey for bar text was 3.7:1)
COUNT_PX, FULL_SIZE_STEPS, COUNT_COLOUR = 14.5, 12, "#31333F"
FUNNEL_BARS = (  # column of the funnel table, legend label, colour
    ("reached", "reached", "#c6dbef"),
    ("answered", "answered", "#6baed6"),
    ("correct", "correct", "#08519c"),
)


def step_label(number: int, title: str, width: int = 38) -> str:
    """``"3. Scaled dot-product…"``: a step's number (from 1, as the class store's tables and
    every screen count) and its title, cut to ``width``."""
    text = f"{number}. {title}"
    return text if len(text) <= width else text[: width - 1] + "…"


def count_dtick(most: int, ticks: int = 8) -> int:
    """The step between ticks of an axis of counts from 0 to ``most``: a whole 1, 2 or 5 times
    a power of ten, the smallest giving at most ``ticks`` steps (never a fraction of a student)."""
    scale = 1
    while True:
        for step in (scale, 2 * scale, 5 * scale):
            if most <= step * ticks:
                return step
        scale *= 10


def funnel_figure(
    funnel: pd.DataFrame, students: int, height: int = 420, note: str = ""
) -> go.Figure:
    """Grouped columns, a group per step (numbered from 1, left to right), of the students who
    reached, answered and got right each step, each count written above its column.

    The counts are never shrunk to fit a column (``constraintext="none"``): a projected page
    keeps them at ``COUNT_PX`` (23.2 px in presenter mode), however many students; a lesson of
    more than ``FULL_SIZE_STEPS`` steps gets them smaller, at least 17 px projected up to 16.

    Args:
        funnel: one row per step with ``step`` (from 1), ``title``, ``reached``, ``answered``
            and ``correct`` (NA where a step has no graded question: no column), as
            ``Teacher.funnel`` returns it.
        students: how many joined (the axis ends there, so a full column is the whole class).
        height: of the figure in pixels.
        note: said after the title ("Paused · up to step 3").
    """
    numbers = [str(int(s)) for s in funnel["step"]]
    # counts in the font's size up to 12 steps; smaller beyond, so that two neighbours of a
    # 1024 px wide projected page keep apart (16 steps: 10.9 px, 17.4 px in presenter mode)
    size = COUNT_PX * min(1.0, FULL_SIZE_STEPS / max(len(numbers), 1))
    titles = labels(
        [step_label(int(s), str(t)) for s, t in zip(funnel["step"], funnel["title"], strict=True)]
    )
    fig = go.Figure()
    for column, label, colour in FUNNEL_BARS:
        counts = pd.to_numeric(funnel[column], errors="coerce")  # NA: not a graded step
        fig.add_trace(
            go.Bar(
                x=numbers,
                y=counts,
                name=label,
                marker_color=colour,
                text=[("" if pd.isna(c) else int(c)) for c in counts],
                textposition="outside",
                textfont={"size": size, "color": COUNT_COLOUR},
                constraintext="none",
                cliponaxis=False,
                customdata=titles,
                hovertemplate=f"%{{customdata}}: %{{y}} {label}<extra></extra>",
            )
        )
    top = max(students, 1)
    fig.update_layout(
        barmode="group",
        bargap=0.12,
        bargroupgap=0.0,
        height=height,
        title=f"Where the class is: {students} student{'' if students == 1 else 's'}"
        + (f" · {note}" if note else ""),
        xaxis={"title": "step", "type": "category"},
        yaxis={
            "title": "students",
            "range": [0, top * 1.18],  # room for the counts above full columns
            "tick0": 0,
            "dtick": count_dtick(top),
            "tickformat": "d",
        },
        legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02, "yanchor": "bottom"},
        margin={"t": 40, "b": 40, "l": 10, "r": 10},
    )
    return fig


def qr_png(text: str, scale: int = 6) -> bytes:
    """A QR code of ``text`` (a class's link) as PNG bytes, drawn here without a network or a
    browser (segno): ``scale`` pixels per module, a 4-module quiet zone, error correction M
    (a projected code stays readable with a little glare)."""
    code = segno.make(text, error="m", micro=False)
    out = io.BytesIO()
    code.save(out, kind="png", scale=scale, border=4)
    return out.getvalue()
