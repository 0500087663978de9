"""The class store in processes of their own, on SQLite and on PostgreSQL: a replica killed
mid-lesson (SIGKILL while it submits answers in a loop) loses no answer it reported stored and the
student resumes where they were; a script that reads a class (and warms its traces) starts no
thread and exits cleanly. A Python process per case: this tier, not unit."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

import viz_transformer as vt

LESSON = """\
title: A replica killed mid-lesson
model: lesson-tiny
steps:
  - title: read
  - title: read on
  - title: a token
    check: {kind: token, sentence: "gamma delta beta", step: 0}
  - title: words
    check: {kind: text}
"""


# each script's start: the lesson model offered by name, the class store of the database argv[1]
STORE = """
import sys, dataclasses, threading, viz_transformer as vt
from viz_transformer.models.registry import offer_memory_model
from viz_transformer.testing.paper import tiny_paper_model
tiny = tiny_paper_model(seed=3, max_len=12)  # the conftest's lesson model, in this process
spec = dataclasses.replace(tiny.spec, name="lesson-tiny")
offer_memory_model(dataclasses.replace(tiny, spec=spec))
store = vt.classroom(sys.argv[1])
"""
KILLED = (
    STORE
    + """
code, token = sys.argv[2], sys.argv[3]
for i in range(10_000):
    store.students.submit(code, token, 3, f"answer {i}")
    print(i, flush=True)
"""
)


@pytest.fixture
def lesson(tmp_path, lesson_model) -> vt.Lesson:
    path = tmp_path / "processes.yaml"
    path.write_text(LESSON)
    return vt.load_lesson(path)


@pytest.mark.slow
def test_a_replica_killed_mid_lesson_loses_nothing_submitted(database_url, lesson):
    store = vt.classroom(database_url)
    code, key = store.teacher.create(lesson)
    token = store.students.join(code, "Ana")
    store.students.move(code, token, 3)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, database_url, code, token],
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    done = [proc.stdout.readline() for _ in range(30)]  # 30 answers reported stored
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert all(line.strip() for line in done)
    stored = store.teacher.answers(code, key)["answer"].tolist()
    assert stored[:30] == [f"answer {i}" for i in range(30)]  # none lost, in order
    assert store.students.place(code, token) == 3  # the student resumes where they were
    # the database still works
    assert store.students.submit(code, token, 3, "after").correct is None


READER = (
    STORE
    + """
store.lessons.lesson(sys.argv[2])
print(threading.active_count(), flush=True)
if sys.argv[3] == "warm":
    store.lessons.warm(sys.argv[2])  # the process exits while the warm-up thread may be tracing
"""
)


@pytest.mark.parametrize("warm", ["read", "warm"])
def test_a_script_reading_a_class_leaves_no_torch_thread_and_exits_cleanly(
    lesson, database_url, warm
):
    code, _ = vt.classroom(database_url).teacher.create(lesson)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", READER, database_url, code, warm],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]  # reading a class started no thread
