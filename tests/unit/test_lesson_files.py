"""Lesson files: each bad-file case gives ``FILE:LINE: what is wrong`` at the right line (through
``vt.validate_lesson`` and the ``lesson validate`` command), YAML never builds objects, and the
built-in lessons pass validation."""

from __future__ import annotations

from pathlib import Path

import pytest

import viz_transformer as vt
from viz_transformer.__main__ import main

GOOD = """\
title: Tiny
model: lesson-tiny
steps:
  - title: one
    page: attention_maps
    view: {sentence: "delta alpha", kind: cross, layer: 1, head: 1}
    check: {kind: head, attention: cross, sentence: "delta alpha", query: 1, key: 0}
  - title: two
    check: {kind: token, sentence: "delta alpha", step: 1}
  - title: three
    check:
      kind: number
      quantity: attention_weight
      args: {sentence: "delta alpha", attention: encoder, layer: 0, head: 1, query: 1, key: 0}
  - title: four
    check: {kind: choice, options: ["yes", "no"], correct: 1}
"""
# (what to replace in GOOD, with what, the line blamed, words of the message)
CASES = {
    "bad YAML": ('title: two\n', 'title: [two\n', 9, "not valid YAML"),
    "python tag": ("title: Tiny", "title: !!python/object/apply:os.system [ls]", 1, "tag"),
    "duplicate key": ("  - title: two\n", "  - title: two\n    title: deux\n", 9, "given twice"),
    "not a mapping": (GOOD, "- a\n- b\n", 1, "must be a mapping"),
    "unknown model": ("model: lesson-tiny", "model: gpt-9", 2, "unknown model 'gpt-9'"),
    "no steps": (GOOD[GOOD.index("steps:"):], "steps: []\n", 3, "at least one step"),
    "unknown field": ("  - title: two\n", "  - title: two\n    txet: hi\n", 9, "'txet'"),
    "step without title": ("  - title: two\n    check", "  - check", 8, "lacks 'title'"),
    "unknown page": ("page: attention_maps", "page: attention_mapz", 5, "unknown page"),
    "view without page": ("  - title: two\n", "  - title: two\n    view: {layer: 0}\n", 9,
                          "needs the 'page'"),
    "unknown check kind": ("kind: head", "kind: heads", 7, "unknown check kind 'heads'"),
    "missing check field": (", key: 0}", "}", 7, "lacks 'key'"),
    "negative index": ("step: 1", "step: -1", 9, "whole number from 0"),
    "unknown quantity": ("quantity: attention_weight", "quantity: weight", 13, "unknown quantity"),
    "missing number arg": (", key: 0}\n  - title: four", "}\n  - title: four", 14, "lacks 'key'"),
    "bad tolerance": ("      quantity:", "      tolerance: 2\n      quantity:", 13, "tolerance"),
    "correct beyond options": ("correct: 1", "correct: 2", 16, "2 options"),
    "one option": ('["yes", "no"]', '["yes"]', 16, "at least two"),
    "unquoted yes": ('["yes", "no"]', "[yes, no]", 16, "in quotes"),
    "layer the model lacks (view)": ("layer: 1, head: 1}", "layer: 2, head: 1}", 6,
                                     "layer 2 does not exist"),
    "head the model lacks (view)": ("layer: 1, head: 1}", "layer: 1, head: 2}", 6,
                                    "head 2 does not exist"),
    "unknown view key": ("layer: 1, head: 1}", "layr: 1, head: 1}", 6, "unknown view key 'layr'"),
    "view value the app cannot read": ("layer: 1, head: 1}", "layer: one, head: 1}", 6,
                                       "view key 'layer' cannot be 'one'"),
    "model in a view": ("layer: 1, head: 1}", "layer: 1, head: 1, model: x}", 6,
                        "unknown view key 'model'"),
    "kind the model lacks": ("kind: cross, layer", "kind: crosss, layer", 6, "no 'crosss'"),
    "query beyond the tokens": ("query: 1, key: 0}\n  - title: two",
                                "query: 40, key: 0}\n  - title: two", 7, "query 40 does not exist"),
    "token step beyond the output": ("step: 1", "step: 30", 9, "step 30 does not exist"),
    "head the model lacks (number)": ("head: 1, query", "head: 2, query", 14,
                                      "head 2 does not exist"),
    "layers the model lacks": ("query: 1, key: 0}\n  - title: two",
                               "query: 1, key: 0, layers: [0, 5]}\n  - title: two", 7,
                               "layer 5 does not exist"),
    "sentence it cannot read": ('check: {kind: token, sentence: "delta alpha"',
                                'check: {kind: token, sentence: "delta zebra"', 9,
                                "cannot read 'delta zebra'"),
}  # fmt: skip


def write(tmp_path: Path, text: str, name: str = "tiny.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_good_file_is_fine(tmp_path, lesson_model):
    path = write(tmp_path, GOOD)
    assert vt.validate_lesson(path) == []
    lesson = vt.load_lesson(path)
    assert (lesson.title, lesson.model, lesson.name) == ("Tiny", "lesson-tiny", "tiny")
    assert [s.question.kind for s in lesson.steps] == ["head", "token", "number", "choice"]
    assert lesson.steps[0].view["layer"] == 1 and lesson.steps[0].page == "attention_maps"
    assert lesson.steps[3].question.options == ("yes", "no")
    assert lesson.steps[1].question.where == f"{path}:9" and lesson.source == GOOD


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bad_file_names_its_line(case, tmp_path, lesson_model):
    old, new, line, words = CASES[case]
    assert old in GOOD, case
    path = write(tmp_path, GOOD.replace(old, new, 1))
    problems = vt.validate_lesson(path)
    assert any(p.startswith(f"{path}:{line}: ") and words in p for p in problems), problems
    if "does not exist" not in words and "cannot read" not in words and "no '" not in words:
        with pytest.raises(ValueError, match=f"{path}:{line}: "):
            vt.load_lesson(path)


def test_yaml_tags_never_run_code(tmp_path, lesson_model):
    marker = tmp_path / "ran"
    text = GOOD.replace("title: Tiny", f"title: !!python/object/apply:os.system ['touch {marker}']")
    with pytest.raises(ValueError, match="not allowed"):
        vt.load_lesson(write(tmp_path, text))
    assert not marker.exists()


def test_lesson_validate_command(tmp_path, lesson_model, capsys):
    good, bad = (
        write(tmp_path, GOOD),
        write(tmp_path, GOOD.replace("kind: head", "kind: x"), "b.yaml"),
    )
    assert main(["lesson", "validate", str(good)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["lesson", "validate", str(good), str(bad), str(tmp_path / "none.yaml")]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{bad}:7: unknown check kind 'x'; kinds: head, token, number, choice, text"
    assert out[1].startswith(f"{tmp_path / 'none.yaml'}:0: ") and len(out) == 2


def test_a_teachers_folder_adds_lessons_and_replaces_a_builtin(tmp_path, monkeypatch, lesson_model):
    write(tmp_path, GOOD, "mine.yaml")
    write(tmp_path, GOOD.replace("title: Tiny", "title: Mine"), "paper_tour.yml")
    monkeypatch.setenv("VT_LESSON_DIR", str(tmp_path))
    assert {"mine", "paper_tour"} <= set(vt.lessons())
    assert vt.load_lesson("paper_tour").title == "Mine"
    with pytest.raises(ValueError, match="unknown lesson 'nope'"):
        vt.load_lesson("nope")
    (tmp_path / "sub").mkdir()
    elsewhere = write(tmp_path / "sub", GOOD)
    assert vt.load_lesson(str(elsewhere)).title == "Tiny"  # a path, from the command line
    for name in (str(elsewhere), "../sub/tiny", "sub/tiny.yaml", "mine.yaml"):  # from a URL
        with pytest.raises(ValueError, match="unknown lesson"):
            vt.load_lesson(name, paths=False)
    assert vt.load_lesson("mine", paths=False).title == "Tiny"


@pytest.mark.parametrize("name", ["paper_tour"])
def test_a_builtin_lesson_reads_with_questions_of_every_graded_kind(name):
    """Its shape only (no model runs: reading a lesson loads none); validating it on its model
    is tests/integration/test_curriculum.py's, for every lesson of the course."""
    lesson = vt.load_lesson(name)
    assert 8 <= len(lesson.steps) <= 12
    graded = [s for s in lesson.steps if s.question is not None and s.question.kind != "text"]
    assert len(graded) > len(lesson.steps) / 2
    assert {"head", "token", "number", "choice"} <= {s.question.kind for s in graded}
