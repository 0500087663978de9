"""The class store survives a replica killed mid-lesson (SIGKILL while it submits answers in a
loop): every answer it reported stored is there, in order, and the student resumes where they
were, on SQLite and on PostgreSQL. A process of its own per case: this tier, not unit."""

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
  - title: and on
  - title: words
    check: {kind: text}
"""


KILLED = """
import sys, dataclasses, viz_transformer as vt
from viz_transformer.models.registry import offer_memory_model
from viz_transformer.testing.paper import tiny_paper_model
tiny = tiny_paper_model(seed=3, max_len=12)  # the conftest's lesson model, in this process
spec = dataclasses.replace(tiny.spec, name="lesson-tiny")
offer_memory_model(dataclasses.replace(tiny, spec=spec))
store = vt.classroom(sys.argv[1])
code, token = sys.argv[2], sys.argv[3]
for i in range(10_000):
    store.submit(code, token, 3, f"answer {i}")
    print(i, flush=True)
"""


@pytest.mark.slow
def test_a_replica_killed_mid_lesson_loses_nothing_submitted(database_url, lesson_model, tmp_path):
    path = tmp_path / "killed.yaml"
    path.write_text(LESSON)
    lesson, store = vt.load_lesson(path), vt.classroom(database_url)
    code, key = store.create(lesson)
    token = store.join(code, "Ana")
    store.move(code, token, 3)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, database_url, code, token],
                            stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    done = [proc.stdout.readline() for _ in range(30)]  # 30 answers reported stored
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert all(line.strip() for line in done)
    stored = store.answers(code, key)["answer"].tolist()
    assert stored[:30] == [f"answer {i}" for i in range(30)]  # none lost, in order
    assert store.place(code, token) == 3  # the student resumes where they were
    assert store.submit(code, token, 3, "after").correct is None  # the database still works
