"""``vt.head_roles`` of a tiny model equals each role's formula (``analysis.roles.ROLES``)
applied to ``vt.trace``'s patterns one row at a time, for every attention kind."""

from __future__ import annotations

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis.roles import repeated_text
from viz_transformer.testing.paper import tiny_paper_model

TEXT = "alpha beta alpha gamma beta alpha"  # repeats: duplicate and induction rows in the text too


def mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def positional(A: np.ndarray, causal: bool) -> dict[str, float]:
    """previous, self and first of one head ``[q, k]``, row by row (a causal map's row 0 sees
    only the first token: left out of self and first)."""
    n = min(A.shape)
    start = 1 if causal else 0
    return {
        "previous": mean([A[i, i - 1] for i in range(1, n)]),
        "self": mean([A[i, i] for i in range(start, n)]),
        "first": mean([A[i, 0] for i in range(start, A.shape[0])]),
    }


def repeats(A: np.ndarray, t: tuple[str, ...]) -> dict[str, float]:
    """duplicate and induction of one head over tokens ``t``, row by row."""
    dup = [
        sum(A[i, j] for j in range(i) if t[j] == t[i])
        for i in range(A.shape[0])
        if any(t[j] == t[i] for j in range(i))
    ]
    ind = [
        sum(A[i, j + 1] for j in range(i - 1) if t[j] == t[i])
        for i in range(A.shape[0])
        if any(t[j] == t[i] for j in range(i - 1))
    ]
    return {"duplicate": mean(dup), "induction": mean(ind)}


@pytest.fixture(scope="module")
def model() -> vt.LoadedModel:
    return tiny_paper_model(5, max_len=16, n_encoder_layers=3)  # 16 output rows, 7 source keys


@pytest.mark.parametrize("kind", ["encoder", "decoder"])
def test_self_attention_roles_are_their_formulas(model, kind) -> None:
    roles = vt.head_roles(model, kind, TEXT)
    plain, again = vt.trace(model, TEXT), vt.trace(model, repeated_text(TEXT))
    tokens = again.src_tokens if kind == "encoder" else again.tgt_tokens
    A, B = plain.get(kind), again.get(kind)
    assert set(roles) == {"previous", "self", "first", "duplicate", "induction"}
    for layer, head in np.ndindex(A.shape[:2]):
        want = positional(np.asarray(A[layer, head], np.float64), kind == "decoder")
        want |= repeats(np.asarray(B[layer, head], np.float64), tokens)
        for role, value in want.items():
            assert roles[role][layer, head] == pytest.approx(value, abs=1e-6), (role, layer, head)


def test_cross_attention_roles_are_their_formulas(model) -> None:
    alignment = [(0, 2), (1, 1), (2, 0)]
    roles = vt.head_roles(model, "cross", TEXT, alignment=alignment)
    A = vt.trace(model, TEXT).cross
    assert set(roles) == {"first", "aligning"}
    for layer, head in np.ndindex(A.shape[:2]):
        a = np.asarray(A[layer, head], np.float64)
        assert roles["first"][layer, head] == pytest.approx(a[:, 0].mean(), abs=1e-6)
        pairs = mean([a[i, j] for i, j in alignment])
        assert roles["aligning"][layer, head] == pytest.approx(pairs, abs=1e-6)
