"""``vt.grade`` against numbers read directly from ``vt.trace`` of the lesson model, for every
check kind and at the edges of each rule: every head of every kind graded by its own cell
against the best head's (or the best within ``layers``), exactly 0.9 of the best counting; each
decoder step's token; weights and entropies (masked zeros included) within the tolerance and
outside it, the 0.005 floor; each option's letter."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from types import MappingProxyType

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.course import graders

NAME = "lesson-tiny"  # the conftest's lesson_model
SENTENCE = "kappa delta alpha eta"  # no built-in lesson reads it


@pytest.fixture
def weights(lesson_model) -> dict[str, np.ndarray]:
    tr = vt.trace(lesson_model, SENTENCE)
    return {
        kind: np.asarray(tr.get(kind), dtype=np.float64) for kind in ("encoder", "decoder", "cross")
    }


@pytest.fixture
def grade(lesson_model) -> Callable[[vt.Question, str], vt.Grade]:
    """``vt.grade`` with each sentence traced once per test (``.traces``: the cache)."""
    traces = functools.cache(graders.traced)

    def grade(check: vt.Question, answer: str) -> vt.Grade:
        return vt.grade(check, answer, traces)

    grade.traces = traces  # type: ignore[attr-defined]
    return grade


def check(kind: str, **args) -> vt.Question:
    return vt.Question(kind, MappingProxyType(args), NAME)


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_every_head_is_graded_by_its_own_cell(weights, kind, grade):
    arr = weights[kind]  # [layers, heads, q, k]
    n_q, n_k = arr.shape[2:]
    for q, k in [(n_q - 1, 0), (1, min(1, n_k - 1)), (n_q - 1, n_k - 1)]:
        cells = arr[:, :, q, k]
        best = np.unravel_index(cells.argmax(), cells.shape)
        c = check("head", attention=kind, sentence=SENTENCE, query=q, key=k)
        assert grade(c, "?").expected == f"L{best[0]} H{best[1]}"
        for layer, head in np.ndindex(cells.shape):
            right = bool(cells[layer, head] >= 0.9 * cells.max())
            assert grade(c, f"L{layer} H{head}").correct is right, (q, k, layer, head)


def test_layers_restrict_the_best_head(weights, grade):
    arr = weights["encoder"][:, :, 2, 1]
    for layer in range(arr.shape[0]):
        c = check("head", attention="encoder", sentence=SENTENCE, query=2, key=1, layers=[layer])
        best = int(arr[layer].argmax())
        assert grade(c, "?").expected == f"L{layer} H{best}"
        for head in range(arr.shape[1]):
            right = bool(arr[layer, head] >= 0.9 * arr[layer].max())
            assert grade(c, f"L{layer} H{head}").correct is right
        other = 1 - layer
        assert grade(c, f"L{other} H{best}").correct is False


def test_the_last_layer_and_head_are_among_the_heads_asked_about(weights, grade):
    arr = weights["cross"][:, :, 1, 0]
    layers, heads = arr.shape
    c = check("head", attention="cross", sentence=SENTENCE, query=1, key=0)
    g = grade(c, f"L{layers - 1} H{heads - 1}")
    assert "not among" not in g.feedback
    assert g.correct is bool(arr[-1, -1] >= 0.9 * arr.max())
    for answer in (f"L{layers} H0", f"L0 H{heads}"):
        g = grade(c, answer)
        assert g.correct is False and "not among the heads" in g.feedback


def test_exactly_the_share_counts(weights, monkeypatch, grade):
    arr = weights["decoder"][:, :, 3, 1]
    best = np.unravel_index(arr.argmax(), arr.shape)
    c = check("head", attention="decoder", sentence=SENTENCE, query=3, key=1)
    monkeypatch.setattr(graders, "HEAD_SHARE", 1.0)  # the best head alone, at exactly the share
    assert grade(c, f"L{best[0]} H{best[1]}").correct


def test_each_step_reads_the_decoder_input_there(lesson_model, grade):
    tgt = vt.trace(lesson_model, SENTENCE).tgt_tokens
    for step, token in enumerate(tgt):
        c = check("token", sentence=SENTENCE, step=step)
        assert grade(c, token).correct and grade(c, "?").expected == token
        for quoted in (
            f"'{token}'",
            f'"{token}"',
            f"` {token.upper()} `",
        ):  # as cited in a sentence
            assert grade(c, quoted).correct, quoted
        others = {t for t in tgt if graders.normalise_token(t) != graders.normalise_token(token)}
        for other in sorted(others)[:2]:
            assert grade(c, other).correct is False


def number(quantity: str, tolerance: float | None = None, **args) -> vt.Question:
    extra = {} if tolerance is None else {"tolerance": tolerance}
    return check("number", quantity=quantity, args={"sentence": SENTENCE, **args}, **extra)


CELLS = [("decoder", 1, 1, 3, 2), ("cross", 0, 1, 2, 3), ("encoder", 1, 0, 0, 4)]


@pytest.mark.parametrize(("kind", "layer", "head", "q", "k"), CELLS)
def test_attention_weight_is_the_traces_cell(weights, kind, layer, head, q, k, grade):
    w = weights[kind][layer, head, q, k]
    c = number(
        "attention_weight", tolerance=0.1, attention=kind, layer=layer, head=head, query=q, key=k
    )
    assert graders.number_value(c, grade.traces) == pytest.approx(w, abs=1e-7)
    assert grade(c, "?").expected == f"{w:.4g}"
    margin = max(0.1 * w, 0.005)
    assert grade(c, f"{w + 0.98 * margin:.9f}").correct
    assert grade(c, f"{w - 0.98 * margin:.9f}").correct
    assert grade(c, f"{w + 1.02 * margin:.9f}").correct is False
    assert grade(c, f"{w - 1.02 * margin:.9f}").correct is False


def test_the_floor_and_the_relative_tolerance(weights, grade):
    # a weight small enough that 2% of it is under the 0.005 floor, and one large enough that
    # 2% of it is over
    arr = weights["encoder"]
    small = np.unravel_index(np.abs(arr - 0.1).argmin(), arr.shape)
    large = np.unravel_index(arr.argmax(), arr.shape)
    assert arr[small] * 0.02 < 0.005 < arr[large] * 0.02 or arr[large] < 0.25
    for cell in (small, large):
        w = arr[cell]
        layer, head, q, k = map(int, cell)
        c = number("attention_weight", attention="encoder", layer=layer, head=head, query=q, key=k)
        margin = max(0.02 * w, 0.005)
        assert grade(c, f"{w + 0.95 * margin:.9f}").correct
        assert grade(c, f"{w + 1.05 * margin:.9f}").correct is False


@pytest.mark.parametrize(
    ("kind", "q"), [("decoder", 1), ("decoder", 4), ("encoder", 2), ("cross", 0)]
)
def test_row_entropy_in_bits_with_masked_zeros(weights, kind, q, grade):
    row = weights[kind][1, 0, q]
    bits = -sum(p * math.log2(p) for p in row if p > 0)
    c = number("row_entropy", tolerance=0.001, attention=kind, layer=1, head=0, query=q)
    assert graders.number_value(c, grade.traces) == pytest.approx(bits, rel=1e-5, abs=1e-7)
    assert grade(c, f"{bits:.6f}").correct
    if bits > 0.1:
        assert grade(c, f"{bits * math.log(2):.6f}").correct is False


def test_a_wrong_numbers_feedback_says_how_far_off_relatively(weights, grade):
    w = weights["cross"][1, 1, 2, 0]
    c = number("attention_weight", attention="cross", layer=1, head=1, query=2, key=0)
    g = grade(c, f"{1.5 * w:.9f}")
    assert g.correct is False and "50% off" in g.feedback


def test_each_option_letter_is_that_option(grade):
    options = ["Queries", "Keys", "Values", "Softmax"]
    for correct in range(len(options)):
        c = check("choice", options=options, correct=correct)
        for i, letter in enumerate("abcd"):
            assert grade(c, letter).correct is (i == correct)
            assert grade(c, f"{letter.upper()})").correct is (i == correct)
            assert grade(c, options[i].upper()).correct is (i == correct)
        assert grade(c, "e").readable is False


def test_a_cross_attention_head_is_graded_naming_the_rows_label_on_the_map(lesson_model, grade):
    """A cross-attention map labels a row by the token predicted there, and so does the grade
    (issue 49: the question said "the row labelled 'preto' (row 4)", the grade "row 4 ('gato')",
    the decoder's input there)."""
    tr = vt.trace(lesson_model, SENTENCE)
    pairs = zip(tr.pred_tokens, tr.tgt_tokens, strict=True)
    q = next(i for i, (p, t) in enumerate(pairs) if p != t)
    k = 1  # row q: the two conventions differ there (row 0 reads <s>)
    c = check("head", attention="cross", sentence=SENTENCE, query=q, key=k)
    for answer in ("L0 H0", "L1 H1"):
        cell = f"row {q} ({tr.pred_tokens[q]!r}) to column {k} ({tr.src_tokens[k]!r})"
        assert cell in grade(c, answer).feedback


@pytest.mark.parametrize(
    ("position", "given", "margin"),
    [(0, "0.1", "(at most 0.005 apart counts)"), (1, "0.5", "(within 2% counts)")],
)
def test_a_wrong_numbers_feedback_names_the_margin_that_applies(position, given, margin, grade):
    """PE(0, 0) = sin(0) = 0: 2% of 0 is nothing, the 0.005 floor is what counts (issue 49: the
    feedback said "within 2%"); PE(1, 0) = sin(1) = 0.84: 2% of it, 0.017, is what counts."""
    c = check("number", quantity="pe_value", args={"position": position, "dim": 0, "d_model": 8})
    g = grade(c, given)
    assert g.correct is False and margin in g.feedback, g.feedback
