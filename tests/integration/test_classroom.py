"""The class store (``vt.classroom``) on SQLite and on a real PostgreSQL server: a class from
create to the teacher's tables, grading at answer time, keys and unknown codes, 60 students
submitting at once, and hostile names stored as typed (a replica killed mid-lesson and a script
that reads a class, each in a process of its own: tests/integration/test_classroom_replica.py)."""

from __future__ import annotations

import io
import re
import threading
import time

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa

import viz_transformer as vt
from viz_transformer.__main__ import main
from viz_transformer.classroom.access import class_code
from viz_transformer.classroom.database import make_engine

SENTENCE = "gamma delta beta"  # in no built-in lesson
LESSON = f"""\
title: Tiny class
model: lesson-tiny
steps:
  - title: read
  - title: head
    check: {{kind: head, attention: cross, sentence: "{SENTENCE}", query: 1, key: 0}}
  - title: token
    check: {{kind: token, sentence: "{SENTENCE}", step: 0}}
  - title: words
    check: {{kind: text}}
"""


@pytest.fixture
def lesson(tmp_path, lesson_model) -> vt.Lesson:
    path = tmp_path / "tiny_class.yaml"  # a file in no lesson folder: the class keeps its text
    path.write_text(LESSON)
    return vt.load_lesson(path)


@pytest.fixture
def store(database_url) -> vt.ClassStore:
    return vt.classroom(database_url)


def best_head(model) -> str:
    cells = np.asarray(vt.trace(model, SENTENCE).cross)[:, :, 1, 0]
    layer, head = np.unravel_index(cells.argmax(), cells.shape)
    return f"L{layer} H{head}"


def test_a_class_from_create_to_the_teachers_tables(store, lesson, lesson_model):
    code, key = store.teacher.create(lesson)
    ana = store.students.join(code, "Ana")
    bo = store.students.join(code.lower(), "  Bo  ")  # code in any case
    assert store.students.place(code, ana) == 0 and store.students.student(code, bo).name == "Bo"
    store.students.move(code, ana, 1)
    right = store.students.submit(code, ana, 1, best_head(lesson_model))
    assert right.correct and right == vt.grade(lesson.steps[1].question, best_head(lesson_model))
    assert store.students.place(code, ana) == 1  # answering does not move a student on
    assert store.students.submit(code, bo, 2, "nope").correct is False
    assert store.students.submit(code, bo, 2, "  NOPE ").correct is False
    assert store.students.submit(code, bo, 3, "heads align").correct is None
    store.students.move(code, ana, 2)

    df = store.teacher.answers(code, key)
    assert list(df.columns) == ["student", "step", "answer", "correct", "seconds", "at"]
    assert df["student"].tolist() == ["Ana", "Bo", "Bo", "Bo"]
    assert df["step"].tolist() == [2, 3, 3, 4] and df["answer"].iloc[2] == "  NOPE "  # from 1
    assert df["correct"].tolist() == [True, False, False, pd.NA]
    assert (df["seconds"] >= 0).all() and str(df["at"].dt.tz) == "UTC"

    roster = store.teacher.roster(code, key).set_index("student")
    assert roster.loc["Ana", ["step", "answered", "correct"]].tolist() == [3, 1, 1]
    assert roster.loc["Bo", ["step", "answered", "correct"]].tolist() == [1, 2, 0]

    funnel = store.teacher.funnel(code, key)
    assert funnel["reached"].tolist() == [0, 1, 2, 1]  # Ana opened 1 and 2; Bo answered 2, 3
    assert funnel["answered"].tolist() == [0, 1, 1, 1]
    assert funnel["correct"].tolist() == [pd.NA, 1, 0, pd.NA]  # NA: nothing to grade
    wrong = store.teacher.wrong_answers(code, key)
    assert wrong.to_dict("records") == [{"step": 3, "answer": "nope", "students": 1}]
    mine = store.students.answers_of(code, bo)
    assert [(a.step, a.grade.correct) for a in mine] == [(2, False), (2, False), (3, None)]
    assert mine[0].grade.expected == vt.trace(lesson_model, SENTENCE).tgt_tokens[0]


class Recorded:
    """A server's trace cache that notes each sentence traced (as the app passes its pages')."""

    def __init__(self) -> None:
        self.traced: list[tuple[str, str]] = []
        self.cache: dict[tuple[str, str], vt.Trace] = {}

    def __call__(self, name: str, sentence: str) -> vt.Trace:
        if (name, sentence) not in self.cache:
            self.traced.append((name, sentence))
            self.cache[name, sentence] = vt.trace(vt.load_model(name), sentence)
        return self.cache[name, sentence]


def test_another_replica_grades_the_same_lesson_from_the_database(store, lesson):
    code, _ = store.teacher.create(lesson)
    traces = Recorded()
    other = vt.ClassStore(store.engine, traces)  # a fresh process's store: no lesson in memory
    assert (
        other.lessons.lesson(code).source == LESSON
        and other.lessons.lesson(code).steps[2].question.kind == "token"
    )
    other.lessons.warm(code)  # as the class's first page on that replica does
    for _ in range(200):  # the warm-up traces the lesson's sentence meanwhile
        if traces.cache:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the class's sentence was not traced in the background")
    token = other.students.join(code, "Cy")
    assert other.students.submit(code, token, 2, "<s>").correct
    assert other.students.submit(code, token, 1, "L0 H0").expected.startswith("L")
    assert traces.traced == [(lesson.model, SENTENCE)]  # the warm-up's trace graded both


def test_wrong_key_unknown_code_token_and_step(store, lesson):
    code, key = store.teacher.create(lesson)
    other_code, _ = store.teacher.create(lesson)
    token = store.students.join(code, "Ana")
    for read in (
        store.teacher.answers,
        store.teacher.roster,
        store.teacher.funnel,
        store.teacher.wrong_answers,
        store.access.check_key,
    ):
        with pytest.raises(PermissionError):
            read(code, key + "x")
        with pytest.raises(ValueError, match="no class"):
            read("NOSUCH", key)
    with pytest.raises(ValueError, match="no class"):
        store.students.join("NOSUCH", "Ana")
    with pytest.raises(ValueError, match="unknown student"):
        store.students.submit(code, "not-a-token", 1, "L0 H0")
    with pytest.raises(ValueError, match="unknown student"):
        store.students.place(other_code, token)  # a token of another class
    with pytest.raises(ValueError, match="does not exist"):
        store.students.move(code, token, 4)
    with pytest.raises(ValueError, match="no question"):
        store.students.submit(code, token, 0, "x")
    with pytest.raises(ValueError, match="name"):
        store.students.join(code, " \x00\t ")
    assert store.teacher.answers(code, key).empty and len(store.teacher.roster(code, key)) == 1


def test_names_and_answers_are_stored_as_typed_through_bound_parameters(store, lesson):
    code, key = store.teacher.create(lesson)
    names = ["<img src=x onerror=alert(1)>", "Robert'); DROP TABLE vt_students;--", "Zoë 🙂"]
    tokens = [store.students.join(code, n) for n in names]
    store.students.submit(code, tokens[1], 2, "'; DELETE FROM vt_answers; --")
    assert store.teacher.roster(code, key)["student"].tolist() == names
    assert store.teacher.answers(code, key)["answer"].tolist() == ["'; DELETE FROM vt_answers; --"]
    assert class_code(" ab c1 ") == "ABC1"


@pytest.mark.parametrize("replicas", [1, 3])
def test_sixty_students_submit_at_once_and_none_is_lost(store, lesson, lesson_model, replicas):
    """Three engines stand for three replicas: each queues its own writers, and the database
    file's lock is what they share (busy timeout, BEGIN IMMEDIATE)."""
    code, key = store.teacher.create(lesson)
    url = store.engine.url.render_as_string(hide_password=False)
    stores = [store] + [vt.ClassStore(make_engine(url)) for _ in range(replicas - 1)]
    n, start, errors = 60, threading.Barrier(60, timeout=60), []
    right = best_head(lesson_model)

    def student(i: int) -> None:
        mine = stores[i % replicas]
        try:
            token = mine.students.join(code, f"student {i}")
            mine.students.move(code, token, 1)
            start.wait()  # every submit at the same moment
            assert mine.students.submit(
                code, token, 1, right if i % 2 else "L0 H9"
            ).correct is bool(i % 2)
        except Exception as exc:  # collected: any error of a thread fails the test
            errors.append(repr(exc))

    threads = [threading.Thread(target=student, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for extra in stores[1:]:
        extra.engine.dispose()
    assert errors == []
    df = store.teacher.answers(code, key)
    assert len(df) == n and df["student"].nunique() == n and df["correct"].sum() == n // 2
    assert store.teacher.funnel(code, key)["reached"].tolist()[1] == n


def test_the_default_database_is_a_wal_sqlite_file_in_the_cache(monkeypatch, tmp_path, lesson):
    monkeypatch.delenv("VT_DATABASE_URL", raising=False)
    monkeypatch.setenv("VT_CACHE_DIR", str(tmp_path))
    store = vt.classroom()
    assert store.engine.url.database == str(tmp_path / "classroom.sqlite3")
    store.teacher.create(lesson)
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000
    monkeypatch.setenv("VT_DATABASE_URL", f"sqlite:///{tmp_path / 'other.sqlite3'}")
    assert vt.classroom().engine.url.database == str(tmp_path / "other.sqlite3")


def test_postgres_urls_use_psycopg_and_bad_urls_say_so(postgres_url):
    assert vt.classroom(postgres_url).engine.dialect.driver == "psycopg"
    with pytest.raises(ValueError, match="not a database URL"):
        vt.classroom("not a url")
    with pytest.raises(ValueError, match="not supported"):
        vt.classroom("mysql://u@localhost/db")
    tables = sa.inspect(vt.classroom(postgres_url).engine).get_table_names()
    assert {"vt_classes", "vt_students", "vt_visits", "vt_answers"} <= set(tables)


def test_class_commands_create_a_class_and_export_its_answers(
    database_url, lesson, capsys, monkeypatch
):
    argv = ["class", "create", str(lesson.path), "--db", database_url, "--url", "http://h:1/"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    code, key = re.search(r"class code: (\w+)", out)[1], re.search(r"teacher key: (\S+)", out)[1]
    keys = [key] + [vt.classroom(database_url).teacher.create(lesson)[1] for _ in range(100)]
    assert not [k for k in keys if k.startswith("-")]  # a prompt's answer, never an option
    assert f"students:   http://h:1/lesson?class={code}\n" in out
    once = re.search(rf"teacher:    http://h:1/teacher\?class={code}&once=([\w-]+)\n", out)[1]
    assert (
        key not in once and vt.classroom(database_url).access.open_link(code, once)[1] == "teacher"
    )
    store = vt.classroom(database_url)
    store.students.submit(code, store.students.join(code, 'Ana, "Jr"'), 3, "a, b\nc")
    monkeypatch.setenv("VT_TEACHER_KEY", key)
    assert main(["class", "export", code.lower(), "--db", database_url]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert df.columns.tolist() == ["student", "step", "answer", "correct", "seconds", "at"]
    assert (df["student"][0], df["step"][0], df["answer"][0]) == ('Ana, "Jr"', 4, "a, b\nc")
    monkeypatch.setenv("VT_TEACHER_KEY", "wrong")
    assert main(["class", "export", code, "--db", database_url]) == 1
    assert capsys.readouterr().err == "error: wrong teacher key for this class.\n"


def test_warm_traces_a_class_s_sentences_once_per_store(store, lesson, database_url):
    code, _ = store.teacher.create(lesson)
    traces = Recorded()
    reader = vt.classroom(database_url, traces)  # another replica
    before = set(threading.enumerate())
    reader.lessons.lesson(code)
    assert set(threading.enumerate()) == before  # reading starts nothing
    reader.lessons.warm(code)
    reader.lessons.warm(code)
    started = [t for t in threading.enumerate() if t not in before]
    assert len(started) <= 1 and not any(t.daemon for t in started)
    for t in started:
        t.join(60)
    assert traces.traced == [("lesson-tiny", SENTENCE)]
