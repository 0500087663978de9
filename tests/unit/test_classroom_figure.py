"""The Teacher page's funnel figure: whole-student ticks on the count axis, whatever the class
size, and a title that says "1 student" but "2 students"."""

from __future__ import annotations

import pandas as pd
import pytest

from viz_transformer.figures.classroom import count_dtick, funnel_figure


def _funnel(students: int) -> pd.DataFrame:
    return pd.DataFrame({"step": [0, 1], "title": ["read", "head"], "kind": [None, "head"],
                         "reached": [students, students], "answered": [0, students],
                         "correct": [pd.NA, students // 2]})  # fmt: skip


@pytest.mark.parametrize("students", [0, 1, 2, 3, 7, 9, 30, 61, 250, 1000])
def test_the_count_axis_ticks_whole_students_a_few_times(students):
    axis = funnel_figure(_funnel(students), students).layout.xaxis
    assert axis.tickformat == "d" and axis.tick0 == 0
    assert isinstance(axis.dtick, int) and axis.dtick >= 1
    top = axis.range[1]
    ticks = [axis.dtick * i for i in range(int(top // axis.dtick) + 1)]
    assert 2 <= len(ticks) <= 10  # a readable number of ticks, each a whole count
    assert ticks[-1] <= top < ticks[-1] + axis.dtick
    if students >= 2:  # the smallest 1-2-5 step giving at most 8 steps, counted another way
        fits = [d * 10**p for p in range(4) for d in (1, 2, 5) if students / (d * 10**p) <= 8]
        assert axis.dtick == min(fits)


def test_the_title_counts_students_in_the_right_number():
    assert funnel_figure(_funnel(1), 1).layout.title.text.endswith(": 1 student")
    assert funnel_figure(_funnel(2), 2).layout.title.text.endswith(": 2 students")
    assert funnel_figure(_funnel(0), 0).layout.title.text.endswith(": 0 students")
    assert count_dtick(0) == count_dtick(1) == count_dtick(8) == 1 and count_dtick(9) == 2
