"""``vt.grade``: every check kind against its definition on a tiny random model, computed here
another way from ``vt.trace`` (or the model's own sinusoid table), with a right and a wrong
answer each, on sentences that no built-in lesson uses."""

from __future__ import annotations

import math
from dataclasses import replace
from types import MappingProxyType

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.course import grading, read_lesson
from viz_transformer.course.graders import head_cells, layer_weights, parse_number, pe_value
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.testing.paper import tiny_paper_model

NAME = "lesson-tiny"  # the conftest's lesson_model
SENTENCE = "delta alpha kappa"  # no built-in lesson reads it (their model could not)


@pytest.fixture
def model(lesson_model):
    return lesson_model


def check(kind: str, **args) -> vt.Question:
    return vt.Question(kind, MappingProxyType(args), NAME)


def test_head_right_when_at_least_nine_tenths_of_the_best_head(model):
    tr = vt.trace(model, SENTENCE)
    q, k = 2, 1
    cells = np.asarray(tr.cross)[:, :, q, k]  # [layers, heads]
    best = np.unravel_index(cells.argmax(), cells.shape)
    c = check("head", attention="cross", sentence=SENTENCE, query=q, key=k)
    g = vt.grade(c, f"L{best[0]} H{best[1]}")
    assert g.correct and g.expected == f"L{best[0]} H{best[1]}"
    for layer, head in np.ndindex(cells.shape):
        expect = bool(cells[layer, head] >= 0.9 * cells.max())
        assert vt.grade(c, f"layer {layer} head {head}").correct is expect
    assert not all(vt.grade(c, f"L{la} H{h}").correct for la, h in np.ndindex(cells.shape))


def test_head_with_layers_compares_within_those_layers_only(model):
    tr = vt.trace(model, SENTENCE)
    enc = np.asarray(tr.encoder)[:, :, 1, 0]
    c = check("head", attention="encoder", sentence=SENTENCE, query=1, key=0, layers=[1])
    best = int(enc[1].argmax())
    assert vt.grade(c, f"l1h{best}").correct and vt.grade(c, "?").expected == f"L1 H{best}"
    g = vt.grade(c, f"L0 H{int(enc[0].argmax())}")
    assert g.correct is False and "not among the heads" in g.feedback
    assert vt.grade(c, "L1 H9").correct is False  # the tiny model has 2 heads


def test_an_unreadable_head_says_how_to_write_one(model):
    c = check("head", attention="cross", sentence=SENTENCE, query=1, key=0)
    g = vt.grade(c, "the third one")
    assert g.correct is False and not g.readable and "L1 H3" in g.feedback


def test_token_is_the_decoder_input_ignoring_case_and_display_marks(model):
    tgt = vt.trace(model, SENTENCE).tgt_tokens
    step = 2
    c = check("token", sentence=SENTENCE, step=step)
    assert vt.grade(c, f"▁{tgt[step].upper()}").correct
    assert vt.grade(c, f" ##{tgt[step]} ").correct
    other = next(w for w in ("alpha", "beta", "gamma") if w != tgt[step])
    g = vt.grade(c, other)
    assert g.correct is False and g.expected == tgt[step] and "shifted right" in g.feedback
    assert vt.grade(check("token", sentence=SENTENCE, step=0), "<S>").correct  # the start symbol


def test_attention_weight_within_relative_tolerance(model):
    w = float(np.asarray(vt.trace(model, SENTENCE).decoder)[1, 0, 3, 1])
    c = check("number", quantity="attention_weight", args={"sentence": SENTENCE,
              "attention": "decoder", "layer": 1, "head": 0, "query": 3, "key": 1})  # fmt: skip
    assert vt.grade(c, f"{w * 1.015:.6f}").correct
    assert vt.grade(c, f"{w * 1.1 + 0.01:.6f}").correct is False
    assert vt.grade(c, f"{w:.6f}".replace(".", ",")).correct  # a decimal comma
    masked = dict(c.args["args"], query=1, key=3)  # the future: exactly 0
    assert vt.grade(replace(c, args={**c.args, "args": masked}), "0").correct


def test_row_entropy_in_bits(model):
    row = np.asarray(vt.trace(model, SENTENCE).encoder, dtype=np.float64)[0, 1, 2]
    bits = sum(-p * math.log(p, 2) for p in row if p > 0)
    c = check("number", quantity="row_entropy", tolerance=0.01, args={"sentence": SENTENCE,
              "attention": "encoder", "layer": 0, "head": 1, "query": 2})  # fmt: skip
    assert vt.grade(c, f"{bits:.4f}").correct
    nats = bits * math.log(2)
    assert vt.grade(c, f"{nats:.4f}").correct is False  # nats are not bits


@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_pe_value_is_the_papers_formula_whatever_the_layout_stored(layout):
    table = tiny_paper_model(pe_layout=layout).position_table()  # [positions, 16]
    half = table.shape[1] // 2
    for pos in (0, 3, 11):
        for i in range(half):
            sin, cos = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, half + i)
            assert pe_value(pos, 2 * i, 16) == pytest.approx(table[pos, sin], abs=1e-6)
            assert pe_value(pos, 2 * i + 1, 16) == pytest.approx(table[pos, cos], abs=1e-6)


def test_pe_value_check():
    c = check("number", quantity="pe_value", args={"position": 3, "dim": 5, "d_model": 512})
    value = math.cos(3 / 10000 ** (4 / 512))
    assert vt.grade(c, f"{value:.3f}").correct
    assert vt.grade(c, f"{math.sin(3 / 10000 ** (4 / 512)):.3f}").correct is False


@pytest.mark.parametrize(
    ("text", "value"),
    [("0.62", 0.62), ("0,62", 0.62), (".62", 0.62), ("62%", 0.62), ("−0.5", -0.5),
     ("1e-3", 0.001), ("abc", None), ("1,234.5", None), ("nan", None)],
)  # fmt: skip
def test_numbers_are_read_as_typed(text, value):
    assert parse_number(text) == (pytest.approx(value) if value is not None else None)


def test_an_unreadable_number_is_not_graded_wrong_silently():
    c = check("number", quantity="pe_value", args={"position": 1, "dim": 0, "d_model": 8})
    g = vt.grade(c, "about a half")
    assert (g.correct, g.readable) == (False, False) and "0.62" in g.feedback


def test_choice_by_option_text_or_letter():
    c = check("choice", options=["Encoder", "Decoder", "Cross attention"], correct=2)
    assert vt.grade(c, "  cross   ATTENTION ").correct and vt.grade(c, "c").correct
    g = vt.grade(c, "Decoder")
    assert g.correct is False and g.expected == "Cross attention"
    assert vt.grade(c, "Softmax").readable is False


def test_a_wrong_choice_gives_a_hint_never_the_right_option():
    c = check("choice", options=["Encoder", "Decoder", "Cross attention"], correct=2)
    for wrong in ("Encoder", "b"):
        g = vt.grade(c, wrong)
        assert g.correct is False and g.readable
        assert "cross" not in g.feedback.casefold() and "try another option" in g.feedback


@pytest.mark.parametrize("position", [3, 0])  # a negative value (cos 2.79), then cos 0 = 1
def test_a_wrong_number_says_whether_it_is_too_high_or_too_low(position):
    c = check("number", quantity="pe_value", args={"position": position, "dim": 5, "d_model": 512})
    value = pe_value(position, 5, 512)
    high, low = vt.grade(c, f"{value + 0.2:.4f}"), vt.grade(c, f"{value - 0.2:.4f}")
    assert "too high" in high.feedback and "too low" not in high.feedback
    assert "too low" in low.feedback and "too high" not in low.feedback
    assert "21% off" in high.feedback if position == 3 else "20% off" in low.feedback


def test_text_is_stored_not_graded():
    g = vt.grade(check("text"), "Heads align words.")
    assert g.correct is None and g.expected == ""
    assert vt.grade(check("text"), "  ").readable is False


def test_empty_answers_are_not_read():
    c = check("choice", options=["a", "b"], correct=0)
    assert vt.grade(c, "   ").readable is False


def test_a_lazy_traces_layer_reads_as_the_whole_array():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 3, 5, 4)), rng.normal(size=(2, 3, 5, 4))  # [layers, heads, n, d]
    lazy = LazyPatterns(list(q.astype(np.float32)), list(k.astype(np.float32)), causal=True)
    scores = np.einsum("hqd,hkd->hqk", q[1], k[1])
    scores[:, np.triu(np.ones((5, 5), bool), 1)] = -np.inf
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    assert np.allclose(layer_weights(lazy, 1), weights, atol=1e-5)
    assert np.array_equal(layer_weights(weights[None], 0), weights)


def test_a_head_question_on_a_lazy_trace_reads_one_cell_per_head(monkeypatch):
    """Grading ``head`` computes row ``query`` of each head at column ``key``, no whole head."""
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=(2, 3, 6, 4)), rng.normal(size=(2, 3, 6, 4))
    lazy = LazyPatterns(list(q.astype(np.float32)), list(k.astype(np.float32)), causal=True)
    whole = np.asarray(lazy)
    monkeypatch.setattr(LazyPatterns, "head", lambda *a: pytest.fail("a whole head was made"))
    np.testing.assert_allclose(head_cells(lazy, 1, 4, 2), whole[1, :, 4, 2], atol=1e-6)
    assert np.array_equal(head_cells(whole, 1, 4, 2), whole[1, :, 4, 2])


def test_warm_traces_asks_for_every_sentence_a_check_is_graded_on_once(model):
    text = f"""\
title: warm
model: {NAME}
steps:
  - title: a
    check: {{kind: head, attention: cross, sentence: "{SENTENCE}", query: 1, key: 0}}
  - title: b
    check: {{kind: token, sentence: "kappa iota", step: 1}}
  - title: c
    check: {{kind: number, quantity: pe_value, args: {{position: 1, dim: 0, d_model: 8}}}}
  - title: d
    check: {{kind: token, sentence: "alpha zebra", step: 1}}
"""
    asked: list[tuple[str, str]] = []

    def traces(name: str, sentence: str) -> None:
        asked.append((name, sentence))
        if "zebra" in sentence:
            raise ValueError("not in the vocabulary")  # left for validate_lesson; goes on

    grading.warm_traces(read_lesson(text, "warm"), traces)
    assert asked == [(NAME, "alpha zebra"), (NAME, SENTENCE), (NAME, "kappa iota")]  # sorted
    asked.clear()
    grading.warm_traces(read_lesson(text, "warm"), traces, lambda: not asked)
    assert asked == [(NAME, "alpha zebra")]  # stops before the next once told to


def test_grading_reads_the_callers_traces_and_keeps_none_of_its_own(model):
    """The trace comes from ``traces`` each time (a live model retrained under the same name
    gives a new one); ``vt.grade`` alone traces afresh."""
    c = check("token", sentence=SENTENCE, step=1)
    real = vt.trace(model, SENTENCE)
    asked: list[tuple[str, str]] = []

    def traces(name: str, sentence: str) -> vt.Trace:
        asked.append((name, sentence))
        return replace(real, tgt_tokens=("<s>", f"word{len(asked)}", *real.tgt_tokens[2:]))

    assert vt.grade(c, "word1", traces).correct and vt.grade(c, "word2", traces).correct
    assert asked == [(NAME, SENTENCE)] * 2
    assert vt.grade(c, real.tgt_tokens[1]).correct  # no traces given: the model's own trace


def test_a_kind_the_model_does_not_record_is_a_clear_value_error(model):
    real = vt.trace(model, SENTENCE)
    no_cross = replace(real, cross=None, notes={"cross": "an encoder-only model"})
    cell = {"sentence": SENTENCE, "attention": "cross", "query": 1, "key": 0}
    head = check("head", **cell)
    weight = check("number", quantity="attention_weight", args={**cell, "layer": 0, "head": 0})
    for c in (head, weight):
        with pytest.raises(ValueError, match="has no cross attention \\(an encoder-only model\\)"):
            vt.grade(c, "L0 H0", lambda name, sentence: no_cross)


def test_a_cached_course_value_holds_its_model_so_its_id_names_no_other(model):
    """A live model retrained under one name is a new object: were the old one collected while
    its values stay cached, the new one could get its id and read them."""
    import weakref

    from viz_transformer.course import grading_caches

    retrained = replace(model)  # a new object of the same name
    held = weakref.ref(retrained)
    assert grading_caches.memo(retrained, ("probe", SENTENCE), lambda: 1.5) == 1.5
    assert grading_caches.memo(retrained, ("probe", SENTENCE), lambda: 2.5) == 1.5  # cached
    del retrained  # no cycle holds it: without its entry it would go at once
    assert held() is not None  # its cache entry keeps it: its id stays its own
