"""The course's grading quantities (``course/quantities.py``), each against a direct
computation on the tiny lesson model: the paper's formula for the position table, the captured
pattern raised to sqrt(d_k) for a head without its scale, sums of the chosen tokens'
log-probabilities for a beam, and the library's own functions for ablation, roles, the logit
lens and the score splits; plus how a lesson file names them and what validation reports."""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis import decoding
from viz_transformer.course import GradingCaches, grading_caches, read_lesson, warm_traces
from viz_transformer.course.quantities import COURSE_QUANTITIES, course_value
from viz_transformer.course.question_kinds import NUMBER_FIELDS
from viz_transformer.testing.hf import BUILDERS

NAME = "lesson-tiny"  # the conftest's lesson_model
SENTENCE = "delta alpha kappa"


@pytest.fixture
def model(lesson_model):
    return lesson_model


def value(quantity: str, **args) -> float:
    return course_value(NAME, quantity, MappingProxyType(args))


def grade(quantity: str, answer: str, **args) -> vt.Grade:
    check = vt.Question("number", MappingProxyType({"quantity": quantity, "args": args}), NAME)
    return vt.grade(check, answer)


def sinusoid(pos: int, dim: int, d_model: int, layout: str) -> float:
    """The paper's PE at (pos, dim) of a table stored ``interleaved`` or ``split``."""
    half = d_model // 2
    i, is_cos = (dim // 2, dim % 2) if layout == "interleaved" else (dim % half, dim >= half)
    angle = pos / 10000.0 ** (2 * i / d_model)
    return math.cos(angle) if is_cos else math.sin(angle)


def test_the_position_quantities_read_the_models_own_sinusoid(model):
    table = model.input_embedding().positions
    d_model, layout = table.shape[1], model.module.cfg.pe_layout
    for pos, dim in [(0, 1), (3, 2), (7, d_model - 1)]:
        assert value("position_value", position=pos, dim=dim) == pytest.approx(
            sinusoid(pos, dim, d_model, layout), abs=1e-6
        )
    row = [sinusoid(5, d, d_model, layout) for d in range(d_model)]
    assert value("position_norm", position=5) == pytest.approx(math.sqrt(d_model / 2), abs=1e-5)
    assert value("position_norm", position=5) == pytest.approx(np.linalg.norm(row), abs=1e-5)
    dot = sum(sinusoid(2, d, d_model, layout) * sinusoid(5, d, d_model, layout)
              for d in range(d_model))  # fmt: skip
    assert value("position_dot", position=2, other=5) == pytest.approx(dot, abs=1e-5)
    # an offset is a rotation: the same offset later gives the same dot product
    assert value("position_dot", position=6, other=9) == pytest.approx(dot, abs=1e-5)
    with pytest.raises(ValueError, match="position 99 does not exist"):
        value("position_norm", position=99)


def test_saturation_is_the_captured_pattern_raised_to_sqrt_dk(model):
    p = np.asarray(vt.trace(model, SENTENCE).cross, dtype=np.float64)[1, 0]  # [q, k]
    d_k = model.head_scale().d_k
    raised = p ** math.sqrt(d_k)
    unscaled = raised / raised.sum(-1, keepdims=True)
    head = {"sentence": SENTENCE, "attention": "cross", "layer": 1, "head": 0}

    def entropy(a: np.ndarray) -> float:
        return float(np.mean([-(r[r > 0] * np.log(r[r > 0])).sum() for r in a]))

    assert value("saturation", **head, scale="with", stat="entropy") == pytest.approx(
        entropy(p), rel=1e-4
    )
    assert value("saturation", **head, scale="without", stat="entropy") == pytest.approx(
        entropy(unscaled), rel=1e-3, abs=1e-5
    )
    assert value("saturation", **head, scale="without", stat="max_weight") == pytest.approx(
        unscaled.max(-1).mean(), rel=1e-4
    )
    assert value("saturation", **head, scale="without", stat="saturated") == pytest.approx(
        (unscaled.max(-1) > 0.99).mean()
    )
    assert value("unscaled_weight", **head, query=2, key=1) == pytest.approx(
        unscaled[2, 1], rel=1e-3, abs=1e-6
    )
    with pytest.raises(ValueError, match="'stat' must be one of"):
        value("saturation", **head, scale="without", stat="mode")


def test_decoding_quantities_match_the_chosen_tokens_probabilities(model):
    greedy = decoding.decode_steps(model, SENTENCE, 40, 1, 10)
    lens = vt.logit_lens(model, SENTENCE)  # teacher forced: the last layer's top token
    for t, step in enumerate(greedy.steps):
        prob = value("next_token_prob", sentence=SENTENCE, beam=1, step=t, rank=0)
        assert prob == pytest.approx(step.chosen_prob, rel=1e-5)
        assert prob == pytest.approx(float(lens.probs[-1, t]), rel=1e-4)
        # a greedy beam's score is the sum of the log-probabilities of the tokens chosen so far
        total = sum(math.log(s.chosen_prob) for s in greedy.steps[:t])
        assert value("beam_log_prob", sentence=SENTENCE, beam=1, step=t, rank=0) == pytest.approx(
            total, abs=1e-4
        )
    second = value("next_token_prob", sentence=SENTENCE, beam=1, step=0, rank=1)
    assert second == pytest.approx(float(greedy.steps[0].top_probs[1]))
    assert second <= value("next_token_prob", sentence=SENTENCE, beam=1, step=0, rank=0)
    wide = decoding.decode_steps(model, SENTENCE, 40, 2, 10)
    beams = wide.steps[1].beams
    assert value("beam_log_prob", sentence=SENTENCE, beam=2, step=1, rank=1) == pytest.approx(
        beams[1].log_prob
    )
    with pytest.raises(ValueError, match="'beam' must be 1"):
        value("beam_log_prob", sentence=SENTENCE, beam=0, step=0, rank=0)


def test_head_quantities_are_the_librarys_functions(model):
    head = {"sentence": SENTENCE, "attention": "encoder", "layer": 1, "head": 1}
    zero = vt.head_importance(model, SENTENCE, "encoder", ablation="zero")
    mean = vt.head_importance(model, SENTENCE, "encoder", ablation="mean")
    assert value("head_importance", **head, mode="zero") == pytest.approx(zero[1, 1])
    assert value("head_importance", **head, mode="mean") == pytest.approx(mean[1, 1])
    roles = vt.head_roles(model, "encoder", SENTENCE)
    assert value("role_score", **head, role="previous") == pytest.approx(roles["previous"][1, 1])
    with pytest.raises(ValueError, match="'role' must be one of"):
        value("role_score", **head, role="aligning")  # a cross-attention role
    lens = vt.logit_lens(model, SENTENCE)
    assert value("lens_probability", sentence=SENTENCE, layer=0, position=1) == pytest.approx(
        float(lens.probs[0, 1])
    )


def test_score_and_its_parts_add_up(model):
    head = {"sentence": SENTENCE, "attention": "encoder", "layer": 0, "head": 1}
    tr = vt.trace(model, SENTENCE)
    score = value("attention_score", **head, query=2, key=0)
    row = [value("attention_score", **head, query=2, key=k) for k in range(len(tr.src_tokens))]
    weights = np.exp(np.array(row) - max(row))
    assert weights[0] / weights.sum() == pytest.approx(float(tr.encoder[0, 1, 2, 0]), rel=1e-4)
    parts = vt.score_parts(model, SENTENCE, "encoder", 0, 1, 2, 0, "input")
    named = {p: value("score_part", **head, query=2, key=0, split="input", part=p)
             for p in parts["part"] if p != "rest"}  # fmt: skip
    assert sum(named.values()) == pytest.approx(score, abs=1e-4)
    dims = [value("score_part", **head, query=2, key=0, split="dimension", part=f"d{i}")
            for i in range(model.head_scale().d_k)]  # fmt: skip
    assert sum(dims) == pytest.approx(score, abs=1e-4)
    with pytest.raises(ValueError, match=r"no part 'word\.word'"):
        value("score_part", **head, query=2, key=0, split="input", part="word.word")


def test_a_number_check_grades_a_course_quantity(model):
    right = value("position_norm", position=4)
    assert grade("position_norm", f"{right:.2f}", position=4).correct
    g = grade("position_norm", f"{right * 1.5:.2f}", position=4)
    assert g.correct is False and g.expected == f"{right:.4g}"


LESSON = """title: t
model: lesson-tiny
order: 3
steps:
  - title: s
    check: {{kind: number, quantity: {quantity}, args: {args}}}
"""


def lesson_problems(tmp_path, quantity: str, args: str) -> list[str]:
    path = tmp_path / "q.yaml"
    path.write_text(LESSON.format(quantity=quantity, args=args))
    return vt.validate_lesson(path)


def test_validation_names_a_course_quantitys_bad_args(model, tmp_path):
    for quantity in COURSE_QUANTITIES:  # registered: the file format knows each one's args
        assert NUMBER_FIELDS[quantity] == COURSE_QUANTITIES[quantity].fields
    with pytest.raises(ValueError, match="unknown quantity 'position_sum'"):
        read_lesson(LESSON.format(quantity="position_sum", args="{position: 1}"), "q")
    assert lesson_problems(tmp_path, "position_norm", "{position: 1}") == []
    problems = lesson_problems(tmp_path, "position_dot", "{position: 1, other: -2}")
    assert problems == [f"{tmp_path / 'q.yaml'}:6: 'other' must be a whole number from 0 (got -2)"]
    problems = lesson_problems(tmp_path, "position_norm", "{position: 40}")
    assert len(problems) == 1 and "position 40 does not exist" in problems[0]
    args = f"{{sentence: {SENTENCE}, attention: encoder, layer: 0, head: 0, mode: half}}"
    problems = lesson_problems(tmp_path, "head_importance", args)
    assert len(problems) == 1 and "'mode' must be one of zero, mean" in problems[0]
    args = f"{{sentence: {SENTENCE}, attention: encoder, layer: 5, head: 0, mode: zero}}"
    problems = lesson_problems(tmp_path, "head_importance", args)
    assert len(problems) == 1 and "layer 5 does not exist" in problems[0]


def test_rotary_angle_is_position_times_the_pairs_frequency(tmp_path):
    llama = vt.load_model(f"hf:{BUILDERS['llama'](tmp_path / 'llama')}")
    config = llama.module.config
    d_head = config.hidden_size // config.num_attention_heads
    theta = (getattr(config, "rope_parameters", None) or {}).get("rope_theta") or config.rope_theta
    for position, pair in [(0, 0), (1, 0), (5, 1), (40, d_head // 2 - 1)]:
        angle = position * theta ** (-2 * pair / d_head)
        wrapped = math.atan2(math.sin(angle), math.cos(angle))
        got = course_value(llama.name, "rotary_angle", {"position": position, "pair": pair})
        assert got == pytest.approx(wrapped, abs=1e-5)
    with pytest.raises(ValueError, match="pair 99 does not exist"):
        course_value(llama.name, "rotary_angle", {"position": 3, "pair": 99})


def test_rotary_angle_needs_a_rotary_model(model):
    with pytest.raises(ValueError, match="has no rotary positions"):
        value("rotary_angle", position=1, pair=0)


def test_warming_a_lesson_computes_its_course_quantities_once_for_every_answer(model, monkeypatch):
    sentence = "iota kappa delta"  # no other test asks for its importance: nothing cached
    calls: list[str] = []

    def counted(*args, **kwargs):
        calls.append(args[1])
        return vt.head_importance(*args, **kwargs)

    monkeypatch.setattr(grading_caches, "head_importance", counted)
    args = f"{{sentence: {sentence}, attention: cross, layer: 1, head: 0, mode: zero}}"
    lesson = read_lesson(LESSON.format(quantity="head_importance", args=args), "warm")
    warm_traces(lesson, lambda name, text: None)
    assert calls == [sentence]  # warmed: the ablation ran before any answer
    check = lesson.steps[0].question
    right = vt.head_importance(model, sentence, "cross")[1, 0]
    assert vt.grade(check, f"{right:.4f}").correct and vt.grade(check, "9").correct is False
    assert calls == [sentence]  # the answers reused it
    calls.clear()
    warm_traces(lesson, lambda name, text: None, keep_going=lambda: False)
    assert calls == []


def test_a_failed_course_value_leaves_no_lock_and_is_tried_again(model):
    before = len(grading_caches._KEPT._making)
    for _ in range(2):
        with pytest.raises(ValueError, match="'beam' must be 1"):
            value("next_token_prob", sentence=SENTENCE, beam=0, step=0, rank=0)
        with pytest.raises(ValueError, match="no rotary positions"):
            value("rotary_angle", position=1, pair=0)
    with pytest.raises(ValueError, match="does not know 'zebra'"):  # in the decoding itself
        value("next_token_prob", sentence="zebra zebra", beam=1, step=0, rank=0)
    assert len(grading_caches._KEPT._making) == before


def test_the_callers_sources_give_the_ablations_roles_and_lens(model, monkeypatch):
    """A caller's ``GradingCaches`` (the app: its pages' caches) are read for the ablation of every
    head, the head roles and the logit lens, and nothing is computed beside them."""
    monkeypatch.setattr(grading_caches, "head_importance", None)  # computing here would fail
    monkeypatch.setattr(grading_caches, "head_roles", None)
    monkeypatch.setattr(grading_caches, "logit_lens", None)
    asked: list[tuple] = []
    grid = np.arange(6.0).reshape(2, 3)
    lens = vt.logit_lens(model, SENTENCE)

    def importance(m, sentence, kind, mode):
        asked.append(("importance", m.name, sentence, kind, mode))
        return grid

    def roles(m, sentence, kind):
        asked.append(("roles", m.name, sentence, kind))
        return {"previous": grid + 10}

    def lens_of(m, sentence):
        asked.append(("lens", m.name, sentence))
        return lens

    src = GradingCaches(importance=importance, roles=roles, lens=lens_of)
    head = {"sentence": SENTENCE, "attention": "cross", "layer": 1, "head": 2}
    assert course_value(NAME, "head_importance", {**head, "mode": "mean"}, src) == grid[1, 2]
    assert course_value(NAME, "role_score", {**head, "role": "previous"}, src) == grid[1, 2] + 10
    at = {"sentence": SENTENCE, "layer": 0, "position": 1}
    assert course_value(NAME, "lens_probability", at, src) == pytest.approx(lens.probs[0][1])
    assert asked == [
        ("importance", NAME, SENTENCE, "cross", "mean"),
        ("roles", NAME, SENTENCE, "cross"),
        ("lens", NAME, SENTENCE),
    ]
    asks = {"quantity": "head_importance", "args": {**head, "mode": "zero"}}
    question = vt.Question("number", asks, NAME)
    assert vt.grade(question, "5", src).correct and len(asked) == 4  # vt.grade passes them on


@pytest.mark.needs("streamlit")
def test_the_apps_sources_are_the_what_heads_do_pages_caches(model):
    """The app grades from ``head_caches.grading_caches``: an importance map the page computed is
    what a course answer reads, and role scores the course computes are the page's entry."""
    from viz_transformer.ui import head_caches

    src, grid = head_caches.grading_caches(), np.full((2, 4), 0.25)
    head = {"sentence": SENTENCE, "attention": "cross", "layer": 1, "head": 1}
    importance, roles = head_caches.head_importance_store(), head_caches.roles_store()
    try:
        importance.put(head_caches.importance_key(NAME, SENTENCE, "cross", "zero"), grid)
        assert course_value(NAME, "head_importance", {**head, "mode": "zero"}, src) == 0.25
        got = course_value(NAME, "role_score", {**head, "role": "first"}, src)
        kept = roles.get(head_caches.roles_key(NAME, SENTENCE, "cross"))
        assert kept is not None and got == pytest.approx(kept["first"][1, 1])
    finally:
        importance.clear()
        roles.clear()
