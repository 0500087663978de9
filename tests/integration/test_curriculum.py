"""The built-in course: every lesson validates, reads as a course (order, topic, minutes, goals,
prerequisites), and is walked by a scripted student who answers every check right, the right
answer computed here from the lesson's model (never read from the file, except a choice
question's option, which is data), and one check wrong."""

from __future__ import annotations

import html
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

import viz_transformer as vt
from viz_transformer import settings
from viz_transformer.analysis import decoding
from viz_transformer.figures.heatmap import axes
from viz_transformer.networks.positional import sinusoidal_table

# the optional part (tests/conftest.py OPTIONAL) a lesson on a wheel's model needs
WHEELS = {"smollm2": "smollm2", "minilm": "minilm", "bergamot-en-pt": "bergamot",
          "bergamot-pt-en": "bergamot"}  # fmt: skip
MODEL_GRADED = ("head", "token", "number")  # answers computed from the model (not pe_value)
LABELLED = ("attention_maps", "softmax_saturation", "qkv_walkthrough")  # pages with a map
COURSE = ("paper_tour", "attention_maps", "positions", "softmax_scaling", "decoder",
          "what_heads_do", "why_heads_attend", "modern_decoder")  # fmt: skip


def file_of(name: str) -> dict:
    """A built-in lesson's file as data: readable where its model's wheel is missing too."""
    return yaml.safe_load((settings.CURRICULUM_DIR / f"{name}.yaml").read_text())


def load(name: str, need) -> tuple[vt.Lesson, vt.LoadedModel]:
    """The lesson and its model; skipped (with the install line) where the model's wheel is
    missing, failed under CI."""
    model = file_of(name)["model"]  # before loading: a lesson naming a missing model is refused
    if model in WHEELS:
        need(WHEELS[model])
    lesson = vt.load_lesson(name)
    return lesson, vt.load_model(lesson.model)


def best_head(model: vt.LoadedModel, a: dict) -> tuple[str, str]:
    """(the strongest head, the weakest) on the check's cell, from the trace."""
    cells = np.asarray(vt.trace(model, a["sentence"]).get(a["attention"]))[
        :, :, a["query"], a["key"]
    ]
    layers = list(a.get("layers") or range(cells.shape[0]))
    sub = cells[layers]
    top = np.unravel_index(sub.argmax(), sub.shape)
    low = np.unravel_index(sub.argmin(), sub.shape)
    return f"L{layers[top[0]]} H{top[1]}", f"layer {layers[low[0]]} head {low[1]}"


def unscaled(model: vt.LoadedModel, a: dict) -> tuple[np.ndarray, np.ndarray]:
    """The head's pattern with the scale, and without it: p^sqrt(d_k), renormalised."""
    p = np.asarray(vt.trace(model, a["sentence"]).get(a["attention"]), np.float64)
    p = p[a["layer"], a["head"]]
    raised = p ** math.sqrt(model.head_scale().d_k)
    return p, raised / raised.sum(-1, keepdims=True)


def stat(p: np.ndarray, which: str) -> float:
    top = p.max(-1)
    rows = [-(r[r > 0] * np.log(r[r > 0])).sum() for r in p]
    return {"entropy": float(np.mean(rows)), "max_weight": float(top.mean()),
            "saturated": float((top > 0.99).mean())}[which]  # fmt: skip


def number(model: vt.LoadedModel, quantity: str, a: dict) -> float:
    """The quantity's value, computed here from the model without the grader."""
    if quantity in ("attention_weight", "row_entropy"):
        row = np.asarray(vt.trace(model, a["sentence"]).get(a["attention"]), np.float64)
        row = row[a["layer"], a["head"], a["query"]]
        if quantity == "attention_weight":
            return float(row[a["key"]])
        return float(-(row[row > 0] * np.log2(row[row > 0])).sum())
    if quantity == "pe_value":
        return float(sinusoidal_table(a["position"] + 1, a["d_model"])[a["position"], a["dim"]])
    if quantity.startswith("position_"):
        table = np.asarray(model.input_embedding().positions, np.float64)
        first = table[a["position"]]
        if quantity == "position_value":
            return float(first[a["dim"]])
        return float(np.linalg.norm(first) if quantity == "position_norm"
                     else first @ table[a["other"]])  # fmt: skip
    if quantity == "rotary_angle":
        cos, sin = (np.asarray(t, np.float64) for t in model.rotary_tables(a["position"] + 1))
        return float(np.arctan2(sin[a["position"], a["pair"]], cos[a["position"], a["pair"]]))
    if quantity == "saturation":
        with_scale, without = unscaled(model, a)
        return stat(with_scale if a["scale"] == "with" else without, a["stat"])
    if quantity == "unscaled_weight":
        return float(unscaled(model, a)[1][a["query"], a["key"]])
    if quantity in ("next_token_prob", "beam_log_prob"):
        step = decoding.decode_steps(model, a["sentence"], 40, a["beam"], 10).steps[a["step"]]
        if quantity == "next_token_prob":
            return float(step.top_probs[a["rank"]])
        return step.beams[a["rank"]].log_prob
    if quantity == "head_importance":
        grid = vt.head_importance(model, a["sentence"], a["attention"], ablation=a["mode"])
        return float(grid[a["layer"], a["head"]])
    if quantity == "role_score":
        roles = vt.head_roles(model, a["attention"], a["sentence"])
        return float(roles[a["role"]][a["layer"], a["head"]])
    if quantity == "lens_probability":
        return float(vt.logit_lens(model, a["sentence"]).probs[a["layer"], a["position"]])
    head = (model, a["sentence"], a["attention"], a["layer"], a["head"])
    if quantity == "attention_score":
        return float(vt.attention_scores(*head)[a["query"], a["key"]])
    assert quantity == "score_part", f"the walk does not know {quantity!r}"
    parts = vt.score_parts(*head, a["query"], a["key"], a["split"])
    return float(parts.set_index("part")["value"][a["part"]])


def answers(model: vt.LoadedModel, check: vt.Question) -> tuple[str, str | None]:
    """A right answer as a student types it, and a wrong one (None for a free text)."""
    a = dict(check.args)
    if check.kind == "head":
        return best_head(model, a)
    if check.kind == "token":
        return vt.trace(model, a["sentence"]).tgt_tokens[a["step"]], "xyzzy"
    if check.kind == "choice":
        options = [str(o) for o in a["options"]]
        return options[a["correct"]], options[(a["correct"] + 1) % len(options)]
    if check.kind == "text":
        return "The heads kept their jobs.", None
    right = number(model, a["quantity"], dict(a["args"]))
    return f"{right:.2f}", f"{right * 1.5 + 1:.2f}"  # two decimals, as a student reads them


@pytest.mark.parametrize("name", COURSE)
def test_a_lesson_validates_and_a_student_walks_it(name: str, need) -> None:
    lesson, model = load(name, need)
    assert vt.validate_lesson(name) == []
    wrong_done = False
    for i, step in enumerate(lesson.steps):
        if step.question is None:
            continue
        right, wrong = answers(model, step.question)
        graded = vt.grade(step.question, right)
        expect = None if step.question.kind == "text" else True
        assert graded.correct is expect, f"{name} step {i}: {right!r}: {graded.feedback}"
        if not wrong_done and step.question.kind in MODEL_GRADED:
            assert vt.grade(step.question, wrong).correct is False, f"{name} step {i}: {wrong!r}"
            wrong_done = True
    assert wrong_done, f"{name} has no check graded by its model"


@pytest.mark.parametrize("name", COURSE[1:])
def test_a_new_lesson_has_the_courses_shape(name: str, need) -> None:
    """8-15 steps, each on a page of the app; at least four checks graded by the model (a head,
    token or number check, not the paper's formula); 20-30 minutes; goals and prerequisites
    that are lessons of the course."""
    lesson, _ = load(name, need)
    assert 8 <= len(lesson.steps) <= 15
    assert all(step.page for step in lesson.steps), f"{name}: a step without a page"
    checks = [s.question for s in lesson.steps if s.question is not None]
    graded = [c for c in checks if c.kind in MODEL_GRADED
              and (c.kind != "number" or c.args["quantity"] != "pe_value")]  # fmt: skip
    assert len(graded) >= 4, f"{name}: {len(graded)} checks graded by the model"
    assert 20 <= lesson.minutes <= 30 and lesson.topic and len(lesson.goals) >= 3
    assert lesson.prerequisites and set(lesson.prerequisites) <= set(COURSE) - {name}
    orders = {n: file_of(n)["order"] for n in lesson.prerequisites}
    assert max(orders.values()) < lesson.order, f"{name} comes before a prerequisite: {orders}"


def test_the_course_is_ordered_and_covers_the_paper() -> None:
    files = [file_of(name) for name in COURSE]
    assert [f["order"] for f in files] == list(range(1, len(COURSE) + 1))
    topics = " ".join(f["topic"].lower() for f in files)
    for topic in ("attention maps", "multi-head", "positional", "softmax", "decoder",
                  "cross-attention", "what heads do", "why a head attends", "rotary"):  # fmt: skip
        assert topic in topics, topic


def map_labels(trace: vt.Trace, page: str, kind: str) -> tuple[list[str], list[str]]:
    """The row and column labels the page's map shows: Attention maps labels a cross row by the
    token predicted there; the softmax page and the walkthrough by the token read."""
    if page == "attention_maps":
        rows, cols, *_ = axes(trace, kind, hide_special=False)
        return [html.unescape(r) for r in rows], [html.unescape(c) for c in cols]
    rows, cols = trace.tokens_for(kind)
    return list(rows), list(cols)


def named(question: str, label: str) -> bool:
    return any(f"{q}{label}{q}" in question for q in ('"', "`"))


@pytest.mark.parametrize("name", COURSE)
def test_a_question_names_a_cell_as_its_page_labels_it(name: str, need) -> None:
    """Every check on one cell of a map (a head check, or a number of one query and key) whose
    step opens a page with that map names the row and the column by their labels there."""
    lesson, model = load(name, need)
    for i, step in enumerate(lesson.steps):
        check = step.question
        if check is None or step.page not in LABELLED:
            continue
        a = dict(check.args["args"] if check.kind == "number" else check.args)
        if not {"query", "key", "attention"} <= set(a):
            continue
        rows, cols = map_labels(vt.trace(model, a["sentence"]), step.page, a["attention"])
        question = check.prompt or step.title
        row, col = rows[a["query"]], cols[a["key"]]
        assert named(question, row), f"{name} step {i}: row {a['query']} is labelled {row!r}"
        itself = a["query"] == a["key"] and "itself" in question
        assert itself or named(question, col), f"{name} step {i}: column {a['key']} is {col!r}"


def test_the_docs_course_table_matches_the_files() -> None:
    """docs/lessons.md's course table: one row per built-in lesson, as its file says."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "lessons.md").read_text()
    rows = [line for line in text.splitlines() if re.match(r"\| \d+ \| `\w+`: ", line)]
    expected = []
    for name in COURSE:
        data = file_of(name)
        graded = sum(1 for s in data["steps"] if s.get("check", {}).get("kind", "text") != "text")
        cells = (data["order"], f"`{name}`: {data['title']}", data["topic"], data["minutes"],
                 data["model"], f"{len(data['steps'])} ({graded})")  # fmt: skip
        expected.append("| " + " | ".join(map(str, cells)) + " |")
    assert rows == expected
