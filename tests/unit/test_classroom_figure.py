"""The Teacher page's figures: the funnel's whole-student ticks on the count axis, whatever the
class size, a title that says "1 student" but "2 students", counts never shrunk; the QR code of
the students' link, module for module."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
import segno
from PIL import Image

from viz_transformer.figures.classroom import count_dtick, funnel_figure, qr_png


def _funnel(students: int) -> pd.DataFrame:
    return pd.DataFrame({"step": [1, 2], "title": ["read", "head"], "kind": [None, "head"],
                         "reached": [students, students], "answered": [0, students],
                         "correct": [pd.NA, students // 2]})  # fmt: skip


@pytest.mark.parametrize("students", [0, 1, 2, 3, 7, 9, 30, 61, 250, 1000])
def test_the_count_axis_ticks_whole_students_a_few_times(students):
    axis = funnel_figure(_funnel(students), students).layout.yaxis
    assert axis.tickformat == "d" and axis.tick0 == 0
    assert isinstance(axis.dtick, int) and axis.dtick >= 1
    top = axis.range[1]
    ticks = [axis.dtick * i for i in range(int(top // axis.dtick) + 1)]
    assert 2 <= len(ticks) <= 10  # a readable number of ticks, each a whole count
    assert ticks[-1] <= top < ticks[-1] + 1.2 * axis.dtick  # with room for counts above
    if students >= 2:  # the smallest 1-2-5 step giving at most 8 steps, counted another way
        fits = [d * 10**p for p in range(4) for d in (1, 2, 5) if students / (d * 10**p) <= 8]
        assert axis.dtick == min(fits)


def test_the_title_counts_students_in_the_right_number():
    assert funnel_figure(_funnel(1), 1).layout.title.text.endswith(": 1 student")
    assert funnel_figure(_funnel(2), 2).layout.title.text.endswith(": 2 students")
    assert funnel_figure(_funnel(0), 0).layout.title.text.endswith(": 0 students")
    assert count_dtick(0) == count_dtick(1) == count_dtick(8) == 1 and count_dtick(9) == 2


def test_counts_are_written_above_each_column_and_never_shrunk():
    fig = funnel_figure(_funnel(12), 12)
    assert [bar.name for bar in fig.data] == ["reached", "answered", "correct"]
    for bar in fig.data:
        assert bar.textposition == "outside" and bar.constraintext == "none"
        assert list(bar.x) == ["1", "2"]  # steps numbered as on screen
        assert list(bar.customdata) == ["1. read", "2. head"]  # the titles, on hover
    assert list(fig.data[2].text) == ["", "6"]  # no count where the step has nothing to grade
    assert fig.layout.yaxis.range[1] > 12  # room above a full column for its count


def test_the_qr_code_holds_the_link_module_for_module():
    link = "http://10.0.0.5:8501/lesson?class=K7QX2M"
    image = np.asarray(Image.open(io.BytesIO(qr_png(link, scale=3))).convert("L"))
    matrix = np.asarray(segno.make(link, error="m", micro=False).matrix, dtype=bool)
    n = matrix.shape[0]
    assert image.shape == (3 * (n + 8), 3 * (n + 8))  # a 4-module quiet zone each side
    modules = image[12 + 1 :: 3, 12 + 1 :: 3][:n, :n] < 128  # the centre pixel of each module
    assert np.array_equal(modules, matrix)
    assert (image[:12] == 255).all()  # the quiet zone is white
