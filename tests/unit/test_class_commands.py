"""``python -m viz_transformer class ...``: the teacher's controls from a shell, on a SQLite file,
with the key from ``VT_TEACHER_KEY`` or a prompt and never from the command line."""

from __future__ import annotations

import getpass
import io
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

import viz_transformer as vt
from viz_transformer.__main__ import main
from viz_transformer.classroom import Controls
from viz_transformer.testing.classroom import COUNTING_LESSON as LESSON

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def room(tmp_path, lesson_model, capsys, monkeypatch):
    path = tmp_path / "counting.yaml"
    path.write_text(LESSON)
    db = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    assert main(["class", "create", str(path), "--db", db, "--url", "http://h:1"]) == 0
    out = capsys.readouterr().out
    code, key = re.search(r"class code: (\w+)", out)[1], re.search(r"teacher key: (\w+)", out)[1]
    monkeypatch.setenv("VT_TEACHER_KEY", key)
    return vt.classroom(db), code, key, db


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = main(["class", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_each_control_command_changes_the_class(room, capsys):
    store, code, key, db = room
    ana = store.students.join(code, "Ana")
    store.students.join(code, "Bo")
    assert run(capsys, "pace", code.lower(), "2", "--db", db) == (0, "pace: up to step 2.\n", "")
    assert store.teacher.controls(code).pace == 2
    assert run(capsys, "pace", code, "ALL", "--db", db)[:2] == (
        0,
        "pace lifted: every step is open.\n",
    )
    assert store.teacher.controls(code).pace is None
    assert run(capsys, "pause", code, "--db", db)[0] == 0 and store.teacher.controls(code).paused
    assert (
        run(capsys, "resume", code, "--db", db)[0] == 0 and not store.teacher.controls(code).paused
    )
    assert (
        run(capsys, "names", code, "hide", "--db", db)[0] == 0
        and store.teacher.controls(code).hide_names
    )
    assert run(capsys, "names", code, "show", "--db", db)[0] == 0
    assert not store.teacher.controls(code).hide_names
    status, out, _ = run(capsys, "remove", code, "bo", "--db", db)
    said = "removed 'Bo' and their answers; the name may not join again (class rejoin).\n"
    assert (status, out) == (0, said)
    with pytest.raises(ValueError, match="removed the name 'Bo'"):
        store.students.join(code, "Bo")
    assert run(capsys, "rejoin", code, "BO", "--db", db)[:2] == (0, "'BO' may join again.\n")
    assert store.teacher.removed(code, key) == {"Bo": True}
    assert store.teacher.roster(code, key)["student"].tolist() == ["Ana"]
    store.students.submit(code, ana, 1, "sine")
    assert run(capsys, "close", code, "--db", db)[0] == 0 and store.teacher.controls(code).closed
    status, out, _ = run(capsys, "export", code, "--db", db)
    assert status == 0
    csv = pd.read_csv(io.StringIO(out))
    assert csv[["student", "step", "answer"]].values.tolist() == [["Ana", 2, "sine"]]
    status, out, _ = run(capsys, "viewer", code, "--db", db, "--url", "http://h:1/")
    once = re.fullmatch(rf"read-only link: http://h:1/teacher\?class={code}&once=([\w-]+)\n", out)
    assert status == 0 and store.access.open_link(code, once[1])[1] == "viewer"


def test_create_prints_a_one_time_link_and_link_and_rotate_make_new_ones(room, capsys):
    """No URL carries the key; ``class link`` makes a one-time link; ``class rotate`` makes a
    new key that the old one, its links and the sessions made from it do not survive."""
    store, code, key, db = room
    status, out, _ = run(capsys, "link", code.lower(), "--db", db, "--url", "http://h:1")
    link = re.fullmatch(rf"teacher:    http://h:1/teacher\?class={code}&once=([\w-]+)\n", out)
    assert status == 0 and key not in out
    session, role = store.access.open_link(code, link[1])
    assert role == "teacher"
    with pytest.raises(PermissionError, match=f"already used.*class link {code}"):
        store.access.open_link(code, link[1])
    status, out, _ = run(capsys, "rotate", code, "--db", db)
    new = re.match(r"new teacher key: (\w+)\n", out)[1]
    assert status == 0 and new != key and store.access.check_key(code, new) == "teacher"
    with pytest.raises(PermissionError, match="has ended"):
        store.teacher.pause(code, session)  # a browser that held the old key
    said = run(capsys, "pause", code, "--db", db)  # VT_TEACHER_KEY still the old key
    assert said == (1, "", "error: wrong teacher key for this class.\n")
    assert not store.teacher.controls(code).paused


def test_bad_input_is_one_line_and_exit_1(room, capsys):
    store, code, _, db = room
    assert run(capsys, "pace", code, "two", "--db", db) == (
        1, "", "error: the pace is a step number from 1, or 'all'; not 'two'.\n"
    )  # fmt: skip
    assert run(capsys, "pace", code, "9", "--db", db)[2].startswith("error: the pace is a step")
    assert run(capsys, "remove", code, "Nobody", "--db", db)[2] == (
        f"error: no student 'Nobody' in class {code}.\n"
    )
    assert run(capsys, "pause", "NOSUCH", "--db", db)[2].startswith("error: no class")
    assert store.teacher.controls(code) == Controls()


def test_the_key_is_never_read_from_the_command_line(room, capsys, monkeypatch):
    store, code, key, db = room
    status, _, err = run(capsys, "pause", code, "--key", key, "--db", db)
    assert status == 1 and "not read from the command line" in err and key not in err
    assert not store.teacher.controls(code).paused
    monkeypatch.setenv("VT_TEACHER_KEY", key + "x")
    assert run(capsys, "pause", code, "--db", db)[2] == "error: wrong teacher key for this class.\n"
    monkeypatch.delenv("VT_TEACHER_KEY")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # no terminal to ask on
    assert "set VT_TEACHER_KEY" in run(capsys, "pause", code, "--db", db)[2]
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    asked = []
    monkeypatch.setattr(getpass, "getpass", lambda prompt: asked.append(prompt) or f" {key}\n")
    assert run(capsys, "pause", code, "--db", db)[0] == 0 and store.teacher.controls(code).paused
    assert asked and "key" in asked[0]


def test_the_docs_run_class_commands_with_the_venv_python_as_the_readme_does():
    for name in ("classroom.md", "lessons.md"):
        text = (ROOT / "docs" / name).read_text()
        bare = re.findall(r"(?<![\w/.])python -m viz_transformer (?:class|lesson) ", text)
        assert not bare and ".venv/bin/python -m viz_transformer class " in text, name
