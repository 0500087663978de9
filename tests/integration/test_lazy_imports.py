"""``import viz_transformer`` loads no SQLAlchemy, SciPy or pandas: the class store, comparison,
attention flow, corpus statistics, score splits and head writes load when a name of theirs is
first read (``viz_transformer.LAZY``), so the package imports where SQLAlchemy is missing.

One fresh interpreter (the test process has long imported them all) in which SQLAlchemy cannot
be imported until the script lets it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("sqlalchemy", "scipy", "pandas")

SCRIPT = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class NoSqlAlchemy(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "sqlalchemy":
                raise ModuleNotFoundError("No module named 'sqlalchemy'", name="sqlalchemy")
            return None

    HEAVY = ("sqlalchemy", "scipy", "pandas")
    blocker = NoSqlAlchemy()
    sys.meta_path.insert(0, blocker)
    import viz_transformer as vt

    out = {"after_import": [m for m in HEAVY if m in sys.modules]}
    out["dir_misses"] = sorted(set(vt.__all__) - set(dir(vt)))
    out["trace"] = callable(vt.trace)
    out["compare"] = vt.compare.__module__
    out["after_compare"] = [m for m in HEAVY if m in sys.modules]
    try:
        vt.classroom
    except ModuleNotFoundError as exc:
        out["without_sqlalchemy"] = exc.name
    sys.meta_path.remove(blocker)
    import viz_transformer.classroom.store  # first the subpackage that shares the name

    out["classroom"] = repr(vt.classroom)
    out["store"] = vt.ClassStore.__name__
    try:
        vt.no_such_name
    except AttributeError as exc:
        out["unknown"] = str(exc)
    print(json.dumps(out))
    """
)


def test_the_heavy_parts_load_on_first_use_and_the_package_imports_without_sqlalchemy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["after_import"] == [], "import viz_transformer loaded " + ", ".join(
        out["after_import"]
    )
    assert out["dir_misses"] == [] and out["trace"]
    assert out["compare"] == "viz_transformer.analysis.comparison.model_pair"
    assert "scipy" in out["after_compare"] and "sqlalchemy" not in out["after_compare"]
    assert out["without_sqlalchemy"] == "sqlalchemy"
    assert out["classroom"].startswith("<function classroom at")
    assert out["store"] == "ClassStore"
    assert out["unknown"] == "module 'viz_transformer' has no attribute 'no_such_name'"
