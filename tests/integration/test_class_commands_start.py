"""The class commands that read no answer start without PyTorch (issue 49: a command took 5 to
17 s, all of it start-up): a fresh interpreter runs them and then says what it imported."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import viz_transformer as vt
from viz_transformer.__main__ import main
from viz_transformer.classroom import Controls
from viz_transformer.testing.classroom import COUNTING_LESSON as LESSON

ROOT = Path(__file__).resolve().parents[2]


COMMANDS_ALONE = """
import sys
from viz_transformer.__main__ import main
status = [main(["class", *args.split(), "--db", sys.argv[1]]) for args in sys.argv[2:]]
print(status, "torch" in sys.modules)
"""


def test_the_commands_that_read_no_answer_start_without_pytorch(
    tmp_path, lesson_model, capsys, monkeypatch
):
    """Start-up, not work, made a command take seconds (issue 49): pace, pause, resume, names,
    close, export, link, viewer and rotate load neither PyTorch nor the lesson's model
    (bench/bench_class_commands.py times them)."""
    path = tmp_path / "counting.yaml"
    path.write_text(LESSON)
    db = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    assert main(["class", "create", str(path), "--db", db]) == 0
    out = capsys.readouterr().out
    code = re.search(r"class code: (\w+)", out)[1]
    monkeypatch.setenv("VT_TEACHER_KEY", re.search(r"teacher key: (\w+)", out)[1])
    store = vt.classroom(db)
    orders = [f"link {code}", f"pace {code} 2", f"pause {code}", f"names {code} hide"]
    orders += [f"export {code}", f"viewer {code}", f"rotate {code}"]  # rotate last: a new key
    done = subprocess.run(
        [sys.executable, "-c", COMMANDS_ALONE, db, *orders],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.stdout.splitlines()[-1] == "[0, 0, 0, 0, 0, 0, 0] False", done.stderr
    assert store.teacher.controls(code) == Controls(pace=2, paused=True, hide_names=True)


def test_creating_a_class_reads_its_lesson_without_pytorch(tmp_path):
    """``class create`` reads and checks the lesson file's shape and its model's spec, and grades
    nothing: the four routes by which reading a lesson imported PyTorch (the question kinds'
    graders, the course quantities' computations, grading's sources and the model registry) are
    taken only when an answer is graded or a model loads. paper_tour names a shipped model, so
    its spec is read too."""
    db = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    command = [sys.executable, "-c", COMMANDS_ALONE, db, "create paper_tour"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.stdout.splitlines()[-1] == "[0] False", done.stderr
    assert "class code: " in done.stdout
