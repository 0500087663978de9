"""Issue 28: what an ablation does to each output token, the top-k heads, the bounded batches
of importance and the input cap (the committed one-click demonstration is checked on the
shipped model in tests/integration/test_shipped_models.py)."""

from __future__ import annotations

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis import effects, heads
from viz_transformer.records.progress import Cancelled, StopToken
from viz_transformer.testing.paper import tiny_paper_model

TEXT = "alpha beta gamma delta"


def test_token_effects_score_the_normal_output_with_and_without_the_heads():
    model = tiny_paper_model(device="cpu")
    out_ids = model.reference_ids(TEXT)
    every = [("cross", layer, head) for layer in range(2) for head in range(2)]
    result = effects.token_effects(model, TEXT, every)
    normal = model.forced_logprobs(TEXT, out_ids)[0].double().numpy()
    np.testing.assert_allclose(result.normal, normal, atol=1e-6)
    assert len(result.tokens) == len(out_ids) + 1 and result.tokens[-1] == effects.END
    assert not np.allclose(result.ablated, result.normal)  # no cross-attention: another output
    # the drop is the importance's total: a head's importance is its whole output's loss
    one = [("cross", 1, 0)]
    total = effects.token_effects(model, TEXT, one).drop.sum()
    assert np.isclose(total, vt.head_importance(model, TEXT, "cross")[1, 0], atol=1e-4)
    hurt = result.most_hurt(2)
    assert all(result.drop[i] >= result.drop.max() - 1e-9 or i == hurt[-1] for i in hurt)


def test_ablated_output_is_the_ablated_trace_and_the_effects_with_progress_to_the_end():
    model = tiny_paper_model(device="cpu")
    some = [("cross", 1, 0), ("encoder", 0, 1)]
    fractions: list[float] = []
    result = effects.ablated_output(model, TEXT, some, "mean", fractions.append)
    assert result.text == vt.trace(model, TEXT, ablate=some, ablation="mean").output_text
    alone = effects.token_effects(model, TEXT, some, "mean")
    assert result.effect.tokens == alone.tokens
    # the progress hooks read z only; the fused attention kernel differs by float rounding
    np.testing.assert_allclose(result.effect.normal, alone.normal, atol=1e-5)
    np.testing.assert_allclose(result.effect.ablated, alone.ablated, atol=1e-5)
    # every token of both decodes reported, the fraction never falls and ends at 1
    assert len(fractions) > 2 * len(model.reference_ids(TEXT))
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[0] < 0.1


class _Stop(Exception):
    pass


def test_a_stop_from_progress_ends_the_ablated_output_and_leaves_the_model_clean(same_trace):
    model = tiny_paper_model(device="cpu")
    plain = vt.trace(model, TEXT)

    def stop_past_half(fraction: float) -> None:
        if fraction > 0.5:  # inside the ablated decode (half the work is the two decodes)
            raise _Stop

    with pytest.raises(_Stop):
        effects.ablated_output(model, TEXT, [("cross", 1, 0)], "zero", stop_past_half)
    assert same_trace(vt.trace(model, TEXT), plain)


def test_its_stop_token_ends_the_ablated_output_and_leaves_the_model_clean(same_trace):
    model = tiny_paper_model(device="cpu")
    plain, stop = vt.trace(model, TEXT), StopToken()

    def set_past_half(fraction: float) -> None:
        if fraction > 0.5:  # inside the ablated decode: a Stop pressed meanwhile
            stop.set()

    with pytest.raises(Cancelled):
        effects.ablated_output(model, TEXT, [("cross", 1, 0)], "zero", set_past_half, stop)
    assert same_trace(vt.trace(model, TEXT), plain)


def test_top_heads_are_the_largest_scores_first():
    scores = np.array([[0.1, 0.5], [-0.2, 0.3]])
    assert effects.top_heads(scores, 3, "encoder") == (
        ("encoder", 0, 1),
        ("encoder", 1, 1),
        ("encoder", 0, 0),
    )


def test_importance_batches_stay_under_the_cell_budget(monkeypatch):
    """A long input runs few copies a pass (memory bounded); the scores do not change."""
    model = tiny_paper_model(device="cpu")
    expected = vt.head_importance(model, TEXT, "encoder")
    sizes: list[int] = []
    chunks = heads._chunks

    def spy(n_rows, cells):
        for start, end in chunks(n_rows, cells):
            sizes.append(end - start)
            yield start, end

    cells = heads._cells(model, TEXT, model.reference_ids(TEXT), "encoder")
    monkeypatch.setattr(heads, "BATCH_CELLS", 2 * cells)  # two copies' worth
    monkeypatch.setattr(heads, "_chunks", spy)
    np.testing.assert_allclose(vt.head_importance(model, TEXT, "encoder"), expected, atol=1e-5)
    # the first pass measures one copy; then two a pass (fast passes would take 64)
    assert sizes[0] == 1 and max(sizes) == 2 and sum(sizes) in (4, 5)  # 2 x 2 heads (+ clean)


def test_a_long_input_is_capped_at_whole_words():
    model = tiny_paper_model(device="cpu")
    text = " ".join([TEXT] * 5)
    short, total = effects.capped_text(model, text, 9)
    assert total == len(model.source_ids(text)[0]) > 9
    assert len(model.source_ids(short)[0]) <= 9 and text.startswith(short)
    assert effects.capped_text(model, TEXT, 9) == (TEXT, len(model.source_ids(TEXT)[0]))
