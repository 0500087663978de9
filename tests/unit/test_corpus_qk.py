"""The joint query/key view of one head over a corpus: one point per query and key, each the
head's real q or k scaled by d_k^-1/4 (so q.k is the score), with progress and a Stop."""

from __future__ import annotations

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis.corpus.qk import qk_points
from viz_transformer.records.progress import Cancelled, StopToken

SENTENCES = ["alpha beta gamma", "delta epsilon", "zeta eta theta iota", "kappa alpha"]


def test_points_are_every_query_and_key_and_progress_reaches_one(tiny):
    seen: list[float] = []
    points = qk_points(tiny, SENTENCES, "encoder", 1, 0, progress=seen.append)
    tokens = [vt.trace(tiny, s).src_tokens for s in SENTENCES]
    assert len(points) == 2 * sum(len(t) for t in tokens)  # a query and a key per token
    first = points[points["sentence_id"] == 0]
    assert list(first[first["role"] == "key"]["token"]) == list(tokens[0])
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) == len(SENTENCES)
    assert np.isfinite(points[["x", "y"]].to_numpy()).all()


def test_a_stop_ends_it_between_two_sentences(tiny):
    stop, calls = StopToken(), []

    def progress(fraction: float) -> None:
        calls.append(fraction)
        stop.set()  # the page's Stop, pressed during the first sentence

    with pytest.raises(Cancelled):
        qk_points(tiny, SENTENCES, "encoder", 1, 0, progress=progress, stop=stop)
    assert calls == [0.25]  # the other three sentences were never traced
