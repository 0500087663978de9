"""The Teacher page's funnel: per step of a lesson, how many students reached it, answered it and
answered it right."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from viz_transformer.figures.common import labels

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


def funnel_figure(funnel: pd.DataFrame, students: int, height: int = 420) -> go.Figure:
    """Grouped horizontal bars, a group per step (first step on top), of the students who
    reached, answered and got right each step.

    Args:
        funnel: one row per step with ``step``, ``title``, ``reached``, ``answered`` and
            ``correct`` (NA where a step has no graded question: no bar), as
            ``ClassStore.funnel`` returns it.
        students: how many joined (the axis ends there, so a full bar is the whole class).
        height: of the figure in pixels.
    """
    steps = zip(funnel["step"], funnel["title"], strict=True)
    names = labels([step_label(int(s), str(t)) for s, t in steps])
    fig = go.Figure()
    for column, label, colour in FUNNEL_BARS:
        counts = pd.to_numeric(funnel[column], errors="coerce")  # NA: not a graded step
        fig.add_trace(go.Bar(
            y=names, x=counts, name=label, orientation="h", marker_color=colour,
            text=[("" if pd.isna(c) else int(c)) for c in counts], textposition="outside",
            hovertemplate=f"%{{y}}: %{{x}} {label}<extra></extra>",
        ))  # fmt: skip
    fig.update_layout(
        barmode="group",
        height=height,
        title=f"Where the class is: {students} student{'' if students == 1 else 's'}",
        xaxis={
            "title": "students",
            "range": [0, max(students, 1) * 1.1],
            "tick0": 0,
            "dtick": count_dtick(students),
            "tickformat": "d",
        },
        yaxis={"autorange": "reversed", "automargin": True},
        legend={"orientation": "h", "y": -0.12},
        margin={"t": 50, "b": 40, "l": 10, "r": 20},
    )
    return fig
