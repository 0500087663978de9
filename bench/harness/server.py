"""The app served for a benchmark: ``serve`` (one ``streamlit run app.py``), ``serving``
(``python -m viz_transformer serve --replicas N``: HAProxy in front of replicas) and ``database``
(a fresh class-store database for one run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from viz_transformer.serve.supervisor import healthy
from viz_transformer.testing.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def serve(
    log: Path,
    start_timeout: float = 60,
    root: Path = ROOT,
    command: tuple[str, ...] = ("streamlit", "run", "app.py"),
) -> Iterator[str]:
    """Run ``streamlit run app.py`` (of the checkout ``root``; or ``python -m`` another
    ``command`` given Streamlit's flags, such as ``("viz_transformer", "app")``) on 127.0.0.1
    for the block and yield its URL.

    One intra-op thread, offline; the server's output goes to ``log`` (a pipe nobody reads
    could fill up and stall it). The server is always stopped: terminate, then kill.
    """
    port = free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", *command, "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true",
           "--browser.gatherUsageStats", "false"]  # fmt: skip
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
        url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + start_timeout
        try:
            while not healthy(url):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not start within {start_timeout:.0f} s; "
                                       f"see {log}")  # fmt: skip
                time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)


@contextmanager
def serving(replicas: int, start_timeout: float = 600) -> Iterator[str]:
    """``python -m viz_transformer serve --replicas N`` on a free port for the block; its URL."""
    port = free_port()
    run_dir = Path(tempfile.mkdtemp(prefix=f"classroom-ws-{replicas}-"))
    cmd = [sys.executable, "-m", "viz_transformer", "serve", "--replicas", str(replicas),
           "--port", str(port), "--run-dir", str(run_dir)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        timer = threading.Timer(start_timeout, proc.terminate)  # a stuck start ends the read
        timer.start()
        for line in proc.stdout:
            print(line, end="", flush=True)
            if "healthy behind HAProxy: " in line:
                timer.cancel()
                yield line.rsplit(": ", 1)[1].strip()
                break
        else:
            raise RuntimeError(f"serve did not start (code {proc.wait()}); see {run_dir}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@contextmanager
def database(kind: str) -> Iterator[str]:
    """A fresh database for one run: ``sqlite`` (a file in a temporary folder), ``postgres``
    (a temporary server started as the store's tests start it, but writing to disk), or a
    SQLAlchemy URL as given."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="lesson-ws-") as folder:
            yield f"sqlite:///{Path(folder) / 'classes.sqlite3'}"
    elif kind == "postgres":
        from viz_transformer.testing.postgres import temporary_postgres

        with temporary_postgres(fsync=True) as url:  # durable, as a real server
            yield url
    else:
        yield kind
