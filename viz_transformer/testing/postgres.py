"""A throwaway PostgreSQL server for the class store's tests and benchmarks: Debian's
``initdb`` and ``pg_ctl`` in a temporary folder on a free loopback port."""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from viz_transformer.testing.ports import free_port


def postgres_bin() -> Path | None:
    """Debian's PostgreSQL programs (``/usr/lib/postgresql/N/bin``), or those on PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@contextlib.contextmanager
def temporary_postgres(fsync: bool = False) -> Iterator[str]:
    """A PostgreSQL server of its own for the block; yields its SQLAlchemy URL.

    It runs as the ``postgres`` user when this process is root (``initdb`` refuses root) and is
    stopped and removed afterwards.

    Args:
        fsync: write to disk as a real server does; off (the default) is faster for tests, and
            loses nothing unless the machine itself crashes.

    Raises:
        RuntimeError: PostgreSQL is not installed (``apt-get install -y postgresql``).
    """
    bindir = postgres_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install -y postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="vt-postgres-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = folder / "data", free_port()
    run = functools.partial(subprocess.run, check=True, capture_output=True, text=True)
    run(
        [
            *prefix,
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
        ]
    )
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        f" -c fsync={'on' if fsync else 'off'}"
    )
    run(
        [
            *prefix,
            str(bindir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(folder / "server.log"),
            "-w",
            "start",
        ]
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(folder, ignore_errors=True)
