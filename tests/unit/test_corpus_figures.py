"""The joint query/key scatter's colourings: every point drawn once, tokens grouped as labelled."""

from __future__ import annotations

import numpy as np
import pandas as pd

from viz_transformer.figures import corpus as fc


def _points(tokens: list[str]) -> pd.DataFrame:
    n = len(tokens)
    rng = np.random.default_rng(0)
    return pd.DataFrame({"x": rng.normal(size=n), "y": rng.normal(size=n),
                         "role": ["query", "key"] * (n // 2) + ["query"] * (n % 2),
                         "position": np.arange(n) % 7, "token": tokens,
                         "sentence": ["a sentence"] * n})  # fmt: skip


def test_token_colouring_keeps_the_most_frequent_tokens_apart_and_greys_the_rest() -> None:
    # 12 distinct tokens: "t0" most frequent ... "t11" least, so t10 and t11 fall into "other"
    tokens = [f"t{i}" for i in range(12) for _ in range(30 - 2 * i)]
    fig = fc.qk_scatter(_points(tokens), "token", "title")
    assert sum(len(t.x) for t in fig.data) == len(tokens)  # every point once
    groups = {t.legendgroup for t in fig.data}
    assert groups == {f"t{i}" for i in range(fc.TOP_TOKENS)} | {"other"}
    colours = {t.legendgroup: t.marker.color for t in fig.data}
    assert colours["other"] == "#bbb" and len(set(colours.values())) == fc.TOP_TOKENS + 1
    for trace in fig.data:  # a trace holds the points of its token (or of the rest) and role only
        role = trace.name.rsplit("(", 1)[1].rstrip(")")
        assert set(np.asarray(trace.customdata)[:, 0]) == {role}
        drawn = set(np.asarray(trace.customdata)[:, 1])
        expected = {"t10", "t11"} if trace.legendgroup == "other" else {trace.legendgroup}
        assert drawn <= expected and drawn


def test_role_and_position_colourings_draw_every_point() -> None:
    tokens = ["the", "cat", "sat", "the", "mat", "."] * 5
    for colour in ("role", "position"):
        fig = fc.qk_scatter(_points(tokens), colour, "title")
        assert sorted(t.name for t in fig.data) == ["key", "query"]
        assert sum(len(t.x) for t in fig.data) == len(tokens)
