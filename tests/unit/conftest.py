"""Fixtures of the unit tier: a tiny random paper model offered by name (lessons name their
model) and the class store's databases."""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from viz_transformer.models.paper import PaperModel
from viz_transformer.models.registry import forget_memory_models, offer_memory_model
from viz_transformer.testing.paper import tiny_paper_model

LESSON_MODEL = "lesson-tiny"


@pytest.fixture(scope="session")
def lesson_model() -> PaperModel:
    """A tiny random paper model (seed 3, 12 positions) that ``vt.load_model("lesson-tiny")``
    returns while the session lasts, so a lesson file can name it."""
    tiny = tiny_paper_model(seed=3, max_len=12)
    tiny = replace(tiny, spec=replace(tiny.spec, name=LESSON_MODEL))
    offer_memory_model(tiny)
    yield tiny
    forget_memory_models(LESSON_MODEL)


def _postgres_bin() -> Path | None:
    """Debian's PostgreSQL programs (``/usr/lib/postgresql/N/bin``), or those on PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A PostgreSQL server of its own for the session: ``initdb`` and ``pg_ctl`` in a temporary
    folder on a free port, run as the ``postgres`` user when the tests run as root (initdb
    refuses root), stopped and removed at the end. Skipped where PostgreSQL is not installed,
    except on CI (``CI=true``), where that fails: install Debian's ``postgresql``."""
    bindir = _postgres_bin()
    if bindir is None:
        message = "PostgreSQL is not installed (apt-get install -y postgresql)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    folder = Path(tempfile.mkdtemp(prefix="vt-postgres-"))
    prefix: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: the server runs as the postgres user
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", _free_port()
    run = functools.partial(subprocess.run, check=True, capture_output=True, text=True)
    run([*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
         "--no-sync"])  # fmt: skip
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    )
    run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-o", options,
         "-l", str(folder / "server.log"), "-w", "start"])  # fmt: skip
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                        "stop"], capture_output=True)  # fmt: skip
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh SQLite file, or the session's PostgreSQL server: the class store's tests run on
    both engines."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    return request.getfixturevalue("postgres_url")
