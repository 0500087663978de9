"""What the teacher sees of a class, as pandas tables read in one transaction: every answer,
the roster, the per-step funnel and the most common wrong answers. Callers check the key.

Every table numbers steps from 1, as every screen does (``step`` 1 is the lesson's first step;
the database and ``Students.move``/``submit`` keep the 0-based index)."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Connection, Select, distinct, func, select

from viz_transformer.classroom.pseudonyms import pseudonyms
from viz_transformer.classroom.schema import answers, students, visits
from viz_transformer.course.lesson import Lesson

ANSWER_COLUMNS = ["student", "step", "answer", "correct", "seconds", "at"]


def _utc(values: pd.Series) -> pd.Series:
    return pd.to_datetime(values, utc=True)


def answer_table(conn: Connection, code: str) -> pd.DataFrame:
    """Every answer of class ``code``, oldest first (``ANSWER_COLUMNS``)."""
    query = (
        select(
            students.c.name.label("student"),
            answers.c.step,
            answers.c.answer,
            answers.c.correct,
            answers.c.seconds,
            answers.c.at,
        )
        .join(students, students.c.id == answers.c.student_id)
        .where(answers.c.class_code == code)
        .order_by(answers.c.at, answers.c.id)
    )
    df = pd.DataFrame(conn.execute(query).all(), columns=ANSWER_COLUMNS)
    df["step"] += 1
    types = {
        "student": object,
        "step": "int64",
        "answer": object,
        "correct": "boolean",
        "seconds": "float64",
    }
    return df.astype(types).assign(at=_utc(df["at"]))


def roster_table(conn: Connection, code: str) -> pd.DataFrame:
    """One row per student of class ``code`` in joining order: ``id``, ``student``,
    ``pseudonym`` (stable: what the Teacher page shows with names hidden), ``step``, ``answered``
    and ``correct`` (steps), ``joined``, ``seen``."""
    done = (
        select(answers.c.student_id, func.count(distinct(answers.c.step)).label("answered"))
        .where(answers.c.class_code == code)
        .group_by(answers.c.student_id)
        .subquery()
    )
    right = (
        select(answers.c.student_id, func.count(distinct(answers.c.step)).label("correct"))
        .where(answers.c.class_code == code, answers.c.correct.is_(True))
        .group_by(answers.c.student_id)
        .subquery()
    )
    query = (
        select(
            students.c.id,
            students.c.name.label("student"),
            (students.c.place + 1).label("step"),
            func.coalesce(done.c.answered, 0),
            func.coalesce(right.c.correct, 0),
            students.c.joined_at,
            students.c.seen_at,
        )
        .outerjoin(done, done.c.student_id == students.c.id)
        .outerjoin(right, right.c.student_id == students.c.id)
        .where(students.c.class_code == code)
        .order_by(students.c.joined_at, students.c.id)
    )
    columns = ["id", "student", "step", "answered", "correct", "joined", "seen"]
    df = pd.DataFrame(conn.execute(query).all(), columns=columns)
    df = df.astype(
        {"id": "int64", "student": object, "step": "int64", "answered": "int64", "correct": "int64"}
    )
    df = df.assign(joined=_utc(df["joined"]), seen=_utc(df["seen"]))
    df.insert(2, "pseudonym", pseudonyms(code, df["id"].tolist()))
    return df


def _per_step(conn: Connection, query: Select) -> dict[int, int]:
    return {int(step): int(n) for step, n in conn.execute(query).all()}


def funnel_table(conn: Connection, code: str, lesson: Lesson) -> pd.DataFrame:
    """Per step of ``lesson``: ``step``, ``title``, ``kind``, ``reached``, ``answered``,
    ``correct`` (NA where the step has no graded check)."""
    mine = students.c.class_code == code
    reached = _per_step(
        conn,
        select(visits.c.step, func.count())
        .join(students, students.c.id == visits.c.student_id)
        .where(mine)
        .group_by(visits.c.step),
    )
    per_student = func.count(distinct(answers.c.student_id))
    answered = _per_step(
        conn,
        select(answers.c.step, per_student)
        .where(answers.c.class_code == code)
        .group_by(answers.c.step),
    )
    correct = _per_step(
        conn,
        select(answers.c.step, per_student)
        .where(answers.c.class_code == code, answers.c.correct.is_(True))
        .group_by(answers.c.step),
    )
    rows = []
    for i, step in enumerate(lesson.steps):
        kind = step.question.kind if step.question is not None else None
        graded = kind not in (None, "text")
        rows.append(
            {
                "step": i + 1,
                "title": step.title,
                "kind": kind,
                "reached": reached.get(i, 0),
                "answered": answered.get(i, 0),
                "correct": correct.get(i, 0) if graded else pd.NA,
            }
        )
    return pd.DataFrame(rows).astype({"correct": "Int64"})


def wrong_table(conn: Connection, code: str, top: int = 3) -> pd.DataFrame:
    """The ``top`` most common wrong answers of each step, by how many students gave them
    (compared ignoring case and spaces; a student who gave one twice counts once): ``step``,
    ``answer`` (as first typed), ``students``; the most given first, ties in order given."""
    query = select(answers.c.step, answers.c.answer, answers.c.student_id).where(
        answers.c.class_code == code, answers.c.correct.is_(False)
    )
    who: dict[int, dict[str, set[int]]] = {}  # step -> answer (normalised) -> students
    shown: dict[tuple[int, str], str] = {}
    for step, text, student in conn.execute(query.order_by(answers.c.id)).all():
        same = " ".join(text.split()).casefold()
        who.setdefault(step, {}).setdefault(same, set()).add(student)
        shown.setdefault((step, same), text.strip())
    rows = []
    for step in sorted(who):
        ranked = sorted(who[step].items(), key=lambda item: -len(item[1]))  # stable: first given
        rows += [
            {"step": step + 1, "answer": shown[(step, same)], "students": len(ids)}
            for same, ids in ranked[:top]
        ]
    return pd.DataFrame(rows, columns=["step", "answer", "students"]).astype(
        {"step": "int64", "students": "int64"}
    )
