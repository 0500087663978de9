"""Start the replicas and HAProxy, watch them, restart a replica that dies, stop everything.

Each child writes to its own log file (a pipe nobody reads could fill up and stall it), runs in
a session of its own (a Ctrl+C in the terminal reaches only ``serve``, which then stops the
children in order: HAProxy first), and gets SIGTERM from the kernel if ``serve`` dies without
stopping it (Linux ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from viz_transformer.serve.config import Replica

# SIGTERM, then SIGKILL: every child is gone within 10 s of a stop. A replica that has served
# sessions took ~7 s to exit on SIGTERM here, and it holds nothing worth waiting for.
STOP_GRACE_S = 3.0
POLL_S = 0.25


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent (``serve``) dies."""
    # not Linux (no libc.so.6): serve's own stop still ends them
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def healthy(url: str) -> bool:
    """Whether the Streamlit server at ``url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
            return reply.read() == b"ok"
    except OSError:
        return False


class Supervisor:
    """The children of one ``serve`` run: ``replicas`` app processes and one HAProxy."""

    def __init__(self, root: Path, run_dir: Path, replicas: list[Replica]) -> None:
        self.root, self.run_dir, self.replicas = root, run_dir, replicas
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.restarts: dict[str, int] = {r.name: 0 for r in replicas}

    def _spawn(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
        with (self.run_dir / f"{name}.log").open("ab") as log:
            self.procs[name] = subprocess.Popen(
                cmd, cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent, start_new_session=True,
            )  # fmt: skip
        self._write_state()

    def start_replica(self, replica: Replica, env: dict[str, str]) -> None:
        """``streamlit run app.py`` on 127.0.0.1:port, after its model preload (``replica``)."""
        flags = {"server.port": replica.port, "server.address": "127.0.0.1",
                 "server.headless": "true", "browser.gatherUsageStats": "false"}  # fmt: skip
        cmd = [sys.executable, "-m", "viz_transformer.serve.replica", "app.py",
               *(f"--{k}={v}" for k, v in flags.items())]  # fmt: skip
        self._spawn(replica.name, cmd, env)

    def start_haproxy(self, haproxy: str, config: Path) -> None:
        """HAProxy in the foreground (``-db``) with the rendered ``config``."""
        self._spawn("haproxy", [haproxy, "-db", "-f", str(config)])

    def _write_state(self) -> None:
        """``replicas.json`` in the run folder: each child's pid and port (tests and tools)."""
        ports = {r.name: r.port for r in self.replicas}
        state = {n: {"pid": p.pid, "port": ports.get(n)} for n, p in self.procs.items()}
        (self.run_dir / "replicas.json").write_text(json.dumps(state, indent=1))

    def wait_healthy(self, timeout: float, stopping: Callable[[], bool]) -> None:
        """Until every replica answers its health check.

        Raises:
            RuntimeError: a child exited, or ``timeout`` seconds passed.
        """
        deadline = time.monotonic() + timeout
        waiting = list(self.replicas)
        while waiting and not stopping():
            self.check_alive()
            waiting = [r for r in waiting if not healthy(r.url)]
            if waiting and time.monotonic() > deadline:
                names = ", ".join(r.name for r in waiting)
                raise RuntimeError(f"{names} not healthy after {timeout:.0f} s; see {self.run_dir}")
            time.sleep(POLL_S)

    def check_alive(self) -> None:
        """Raises RuntimeError naming the first child that exited (with its log)."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                log = self.run_dir / f"{name}.log"
                raise RuntimeError(f"{name} exited with code {proc.returncode}; see {log}")

    def dead_replicas(self) -> list[Replica]:
        """Replicas whose process has exited."""
        return [r for r in self.replicas if self.procs[r.name].poll() is not None]

    def stop(self) -> list[str]:
        """SIGTERM to every child, SIGKILL to those still running after ``STOP_GRACE_S``.

        HAProxy first: it closes the students' connections, so no replica waits on one.
        Returns the names of the children that had to be killed.
        """
        for name in sorted(self.procs, key=lambda n: n != "haproxy"):
            if self.procs[name].poll() is None:
                self.procs[name].send_signal(signal.SIGTERM)
        deadline, killed = time.monotonic() + STOP_GRACE_S, []
        for name, proc in self.procs.items():
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                killed.append(name)
        return killed


def child_env() -> dict[str, str]:
    """The replicas' environment: one torch thread each (they share the cores), offline, and
    one cookie secret for all, so a cookie Streamlit signed is valid on every replica."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("STREAMLIT_SERVER_COOKIE_SECRET", os.urandom(24).hex())
    return env


def replica_states(stats_socket: Path) -> dict[str, str]:
    """Each replica's state as HAProxy sees it (``UP``, ``DOWN``, ...), from its admin socket."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(2)
        s.connect(str(stats_socket))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    rows = [line.split(",") for line in data.decode().splitlines() if line and line[0] != "#"]
    return {r[1]: r[17] for r in rows if r[0] == "replicas" and r[1] != "BACKEND"}
