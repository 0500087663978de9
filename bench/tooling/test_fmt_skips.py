"""bench/tooling/fmt_skips.py: a marker stays on a literal table and leaves every other
statement, and the library, the pages and app.py carry at most 60, all on tables."""

from __future__ import annotations

from bench.tooling.fmt_skips import files, markers, without_markers

SOURCE = """TABLE = {"a": (1, -2.5), "b": [None, "x"]}  # fmt: skip
ROWS = [(1, 2),
        (3, 4)]  # fmt: skip
value = compute(1,
                2)  # fmt: skip
PAIRS = (Pair(1), Pair(2))  # fmt: skip
NAMES = (alpha, beta)  # fmt: skip
"""


def test_only_literal_tables_keep_their_marker():
    assert markers(SOURCE) == [(1, True), (3, True), (5, False), (6, False), (7, False)]
    lines = without_markers(SOURCE).splitlines()
    assert lines[0].endswith("]}  # fmt: skip") and lines[2].endswith("(3, 4)]  # fmt: skip")
    assert lines[4] == "                2)" and lines[5] == "PAIRS = (Pair(1), Pair(2))"
    assert without_markers(without_markers(SOURCE)) == without_markers(SOURCE)


def test_the_app_marks_tables_alone_and_at_most_60():
    found = {path: markers(path.read_text(encoding="utf-8")) for path in files()}
    off = [f"{path}:{line}" for path, marks in found.items() for line, kept in marks if not kept]
    assert not off, "python bench/tooling/fmt_skips.py --apply:\n" + "\n".join(off)
    assert sum(len(marks) for marks in found.values()) <= 60
