"""The class reports of one class are that class's alone: on an in-memory SQLite store where a
second class runs the same lesson at the same time, the first class's funnel, roster, wrong
answers and answers equal those of a store where it ran alone (the clock's columns aside). Each
report's query filters by class; these fail when one of the filters is dropped."""

from __future__ import annotations

import random

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.pool import StaticPool

import viz_transformer as vt
from viz_transformer.classroom.schema import metadata
from viz_transformer.course import read_lesson

LESSON = """\
title: Two classes
model: lesson-tiny
steps:
  - title: read
  - title: pick
    check: {kind: choice, options: [sine, cosine, tangent], correct: 1}
  - title: say
    check: {kind: text}
  - title: pick again
    check: {kind: choice, options: [one, two], correct: 0}
"""
ANSWERS = {1: ["sine", "cosine", "tangent", "Sine"], 2: ["heads align"], 3: ["one", "two"]}
CLOCK = ("joined", "seen", "at", "seconds")
PER_STORE = ("id", "pseudonym")  # drawn from the class code and the student's id


def memory_store() -> vt.ClassStore:
    engine = sa.create_engine(
        "sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False}
    )
    metadata.create_all(engine)
    return vt.ClassStore(engine)


def script(seed: int, students: int, prefix: str) -> list[tuple[str, str, int, str | None]]:
    """``(action, student, step, answer)``: joins, then moves and answers at random."""
    rng = random.Random(seed)
    names = [f"{prefix}{i}" for i in range(students)]
    out = [("join", n, 0, None) for n in names]
    for _ in range(30):
        name, step = rng.choice(names), rng.randrange(4)
        if step == 0 or rng.random() < 0.4:
            out.append(("move", name, step, None))
        else:
            out.append(("submit", name, step, rng.choice(ANSWERS[step])))
    return out


def run(store: vt.ClassStore, plays: list[tuple[str, list]]) -> None:
    """Each (code, script) played, their actions interleaved one by one."""
    tokens: dict[str, str] = {}
    for i in range(max(len(s) for _, s in plays)):
        for code, steps in plays:
            if i >= len(steps):
                continue
            action, name, step, answer = steps[i]
            if action == "join":
                tokens[name] = store.students.join(code, name)
                store.students.move(code, tokens[name], 0)
            elif action == "move":
                store.students.move(code, tokens[name], step)
            else:
                store.students.submit(code, tokens[name], step, answer)


def reports(store: vt.ClassStore, code: str, key: str) -> dict[str, pd.DataFrame]:
    tables = {
        "funnel": store.teacher.funnel(code, key),
        "roster": store.teacher.roster(code, key),
        "wrong": store.teacher.wrong_answers(code, key, top=5),
        "answers": store.teacher.answers(code, key),
    }
    return {
        name: t.drop(columns=[c for c in (*CLOCK, *PER_STORE) if c in t.columns]).reset_index(
            drop=True
        )
        for name, t in tables.items()
    }


def test_a_class_reports_only_its_own_students(lesson_model):
    seed = 0
    lesson = read_lesson(LESSON, "two")
    alone = memory_store()
    code, key = alone.teacher.create(lesson)
    mine = script(seed, 4, "A")
    run(alone, [(code, mine)])
    want = reports(alone, code, key)
    shared = memory_store()
    other, _ = shared.teacher.create(lesson)  # created first: its ids come before ours
    code, key = shared.teacher.create(lesson)
    run(shared, [(other, script(seed + 10, 5, "B")), (code, mine)])
    got = reports(shared, code, key)
    for name in want:
        pd.testing.assert_frame_equal(got[name], want[name], check_dtype=False, obj=name)
    assert want["funnel"]["reached"].sum() > 0 and len(want["wrong"]) > 0
