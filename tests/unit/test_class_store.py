"""The class store's numbers on an in-memory SQLite database: a seeded class of scripted students
moves and answers, and the funnel, the roster, the most common wrong answers and the answers'
CSV are each computed again here from the script's own log and compared with the store's.
(Both databases, replicas and 60 students at once: tests/integration/test_classroom.py.)"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass, field

import pandas as pd
import pytest
import sqlalchemy as sa

import viz_transformer as vt
from viz_transformer.classroom import Controls
from viz_transformer.classroom.database import make_engine
from viz_transformer.classroom.lessons import traced
from viz_transformer.course import read_lesson
from viz_transformer.testing.classroom import COUNTING_LESSON as LESSON
from viz_transformer.testing.classroom import RIGHT, WRONG


@pytest.fixture
def store(lesson_model) -> vt.ClassStore:
    return vt.ClassStore(make_engine("sqlite://"))  # a database in memory, new each time


@dataclass
class Log:
    """What the scripted students did, kept here as plain Python."""

    names: list[str] = field(default_factory=list)  # in joining order
    place: dict[str, int] = field(default_factory=dict)  # name -> 0-based step open
    opened: set[tuple[str, int]] = field(default_factory=set)
    rows: list[tuple[str, int, str, bool | None]] = field(default_factory=list)  # one per answer


def play(store: vt.ClassStore, code: str, seed: int, students: int = 9) -> Log:
    """``students`` scripted students join, move and answer at random; the log of it all."""
    rng, log, tokens = random.Random(seed), Log(), {}
    for i in range(students):
        name = f"S{i:02d}"
        tokens[name] = store.students.join(code, name)
        store.students.move(code, tokens[name], 0)  # as the Lesson page does on joining
        log.names.append(name)
        log.place[name], log.opened = 0, log.opened | {(name, 0)}
    for _ in range(60):
        name = rng.choice(log.names)
        step = rng.randrange(5)
        if rng.random() < 0.4 or step == 0:
            store.students.move(code, tokens[name], step)
            log.place[name] = step
            log.opened.add((name, step))
            continue
        if step == 3:
            answer, correct = rng.choice(["heads align", "no idea"]), None
        elif rng.random() < 0.5:
            answer, correct = RIGHT[step], True
        else:
            answer, correct = rng.choice(WRONG[step]), False
        again = [r for r in log.rows if r[0] == name and r[1] == step]
        store.students.submit(code, tokens[name], step, answer)
        if not (again and again[-1][2] == answer):  # the same text sent again: one row
            log.rows.append((name, step, answer, correct))
        log.opened.add((name, step))  # answering opens the step, never moves the student
    return log


def same(text: str) -> str:
    return " ".join(text.split()).casefold()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_funnel_counts_students_per_step_numbered_from_1(store, seed):
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    log = play(store, code, seed)
    funnel = store.teacher.funnel(code, key)
    assert funnel["step"].tolist() == [1, 2, 3, 4, 5]
    kinds = [None if pd.isna(k) else k for k in funnel["kind"]]
    assert kinds == [None, "choice", "number", "text", "choice"]
    for i, row in funnel.iterrows():
        assert row["reached"] == len({n for n, s in log.opened if s == i})
        assert row["answered"] == len({r[0] for r in log.rows if r[1] == i})
        right = len({r[0] for r in log.rows if r[1] == i and r[3]})
        assert (row["correct"] is pd.NA) if i in (0, 3) else row["correct"] == right


@pytest.mark.parametrize("seed", [0, 3])
def test_the_roster_counts_steps_answered_and_right_per_student(store, seed):
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    log = play(store, code, seed)
    roster = store.teacher.roster(code, key)
    assert roster["student"].tolist() == log.names  # joining order
    for _, row in roster.iterrows():
        mine = [r for r in log.rows if r[0] == row["student"]]
        assert row["step"] == log.place[row["student"]] + 1  # numbered from 1, as on screen
        assert row["answered"] == len({r[1] for r in mine})
        assert row["correct"] == len({r[1] for r in mine if r[3]})


@pytest.mark.parametrize("seed", [0, 4, 5])
def test_the_most_common_wrong_answers_count_students_not_submissions(store, seed):
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    log = play(store, code, seed)
    top = 2
    got = store.teacher.wrong_answers(code, key, top=top)
    assert list(got.columns) == ["step", "answer", "students"]
    expected = []
    for step in sorted({r[1] for r in log.rows if r[3] is False}):
        wrong = [r for r in log.rows if r[1] == step and r[3] is False]
        order = list(dict.fromkeys(same(r[2]) for r in wrong))  # first given first
        who = {a: {r[0] for r in wrong if same(r[2]) == a} for a in order}
        ranked = sorted(order, key=lambda a: -len(who[a]))[:top]
        first = {a: next(r[2].strip() for r in wrong if same(r[2]) == a) for a in ranked}
        expected += [(step + 1, first[a], len(who[a])) for a in ranked]
    assert list(got.itertuples(index=False, name=None)) == expected


def test_a_wrong_answer_given_twice_by_one_student_counts_one_student(store):
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    ana, bo = store.students.join(code, "Ana"), store.students.join(code, "Bo")
    for answer in ("sine", "tangent", "sine"):  # a retry of the same wrong answer: kept
        store.students.submit(code, ana, 1, answer)
    store.students.submit(code, bo, 1, "Tangent ")
    assert len(store.teacher.answers(code, key)) == 4
    wrong = store.teacher.wrong_answers(code, key).to_dict("records")
    assert wrong == [
        {"step": 2, "answer": "tangent", "students": 2},
        {"step": 2, "answer": "sine", "students": 1},
    ]


def test_the_same_answer_sent_again_is_one_answer_one_row(store):
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    ana = store.students.join(code, "Ana")
    first = store.students.submit(code, ana, 1, "sine")  # Enter in the box
    assert store.students.submit(code, ana, 1, "sine") == first  # then Check: the same answer
    store.students.submit(code, ana, 1, "cosine")
    store.students.submit(code, ana, 1, "sine")  # a new answer after another one: a row of its own
    store.students.submit(code, ana, 2, "sine")  # the same text to another step: its own row too
    stored = store.teacher.answers(code, key)
    assert stored["answer"].tolist() == ["sine", "cosine", "sine", "sine"]
    assert [a.answer for a in store.students.answers_of(code, ana)] == stored["answer"].tolist()


@pytest.mark.parametrize("seed", [0, 6])
def test_the_answers_csv_has_one_row_per_answer_with_steps_from_1(store, seed):
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    log = play(store, code, seed)
    csv = pd.read_csv(
        io.StringIO(store.teacher.answers(code, key).to_csv(index=False)), dtype={"answer": str}
    )
    assert list(csv.columns) == ["student", "step", "answer", "correct", "seconds", "at"]
    rows = list(zip(csv["student"], csv["step"], csv["answer"].astype(str), strict=True))
    assert rows == [(n, s + 1, a) for n, s, a, _ in log.rows]  # oldest first
    marks = [None if pd.isna(c) else bool(c) for c in csv["correct"]]
    assert marks == [c for *_, c in log.rows]


def test_a_step_answered_right_twice_counts_once_in_the_roster_and_the_funnel(store):
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    ana = store.students.join(code, "Ana")
    for step, answer in ((1, "cosine"), (1, "sine"), (1, "cosine"), (4, "TWO"), (4, "two")):
        store.students.submit(code, ana, step, answer)
    roster = store.teacher.roster(code, key).iloc[0]
    assert (roster["answered"], roster["correct"]) == (2, 1)  # steps 2 and 5; right at 2
    funnel = store.teacher.funnel(code, key).set_index("step")
    assert funnel.loc[2, ["answered", "correct"]].tolist() == [1, 1]
    assert funnel.loc[5, ["answered", "correct"]].tolist() == [1, 0]


def test_an_unreadable_answer_reads_as_unreadable_after_a_reload(store):
    code, _ = store.teacher.create(read_lesson(LESSON, "counting"))
    ana = store.students.join(code, "Ana")
    given = {1: "banana", 2: "L one", 4: "two"}  # not an option, not a number; a wrong option
    sent = {step: store.students.submit(code, ana, step, text) for step, text in given.items()}
    assert [g.readable for g in sent.values()] == [False, False, True]
    replica = vt.ClassStore(store.engine)  # another replica: nothing kept in memory
    for read in (replica.students.board(code, ana).answers, replica.students.answers_of(code, ana)):
        assert {a.step: a.grade for a in read} == sent  # every field, readable too
    assert store.students.submit(code, ana, 1, "banana") == sent[1]  # sent again: the stored grade


def test_the_teacher_board_is_the_four_reads_in_one_transaction(store):
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    log = play(store, code, seed=7)
    store.teacher.hide_names(code, key)
    viewer = store.access.viewer_key(code, key)
    begun = []

    def count(conn):
        begun.append(conn)

    sa.event.listen(store.engine, "begin", count)
    board = store.teacher.board(code, viewer)  # the read-only key reads it
    sa.event.remove(store.engine, "begin", count)
    assert len(begun) == 1  # one transaction, one check of the key
    assert board.controls == store.teacher.controls(code) == Controls(hide_names=True)
    pd.testing.assert_frame_equal(board.roster, store.teacher.roster(code, key))
    pd.testing.assert_frame_equal(board.funnel, store.teacher.funnel(code, key))
    pd.testing.assert_frame_equal(board.wrong, store.teacher.wrong_answers(code, key))
    assert board.roster["student"].tolist() == log.names
    with pytest.raises(PermissionError, match="wrong teacher key"):
        store.teacher.board(code, key + "x")
    with pytest.raises(ValueError, match="no class"):
        store.teacher.board("NOSUCH", key)


TRACED = """\
title: Traced
model: lesson-tiny
steps:
  - title: token
    check: {kind: token, sentence: "delta alpha", step: 0}
"""


def test_the_roles_share_the_stores_lessons_and_grade_from_its_traces(lesson_model):
    """``vt.classroom(url, traces)``: a student's answer is graded from the ``traces`` the store
    was given (the app's pages' cache), and every role reads one cache of lessons."""
    asked: list[str] = []

    def traces(model_name: str, sentence: str) -> vt.Trace:
        asked.append(sentence)
        return traced(model_name, sentence)

    store = vt.ClassStore(make_engine("sqlite://"), traces)
    assert store.teacher.lessons is store.students.lessons is store.lessons
    code, key = store.teacher.create(read_lesson(TRACED, "traced"))
    token = store.students.join(code, "Ana")
    store.students.move(code, token, 0)
    expected = store.students.submit(code, token, 0, "anything").expected
    assert asked == ["delta alpha"] and expected  # the model's first output token
    assert store.students.submit(code, token, 0, expected).correct
    assert store.teacher.answers(code, key)["correct"].tolist() == [False, True]
