"""Start the replicas and HAProxy, watch them, restart a replica that dies, stop everything.

Each child writes to its own log file (a pipe nobody reads could fill up and stall it), runs in
a session of its own (a Ctrl+C in the terminal reaches only ``serve``, which then stops the
children in order: HAProxy first), and gets SIGTERM from the kernel if ``serve`` dies without
stopping it (Linux ``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import csv
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
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

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


class Process(Protocol):
    """What the supervisor asks of a child (``subprocess.Popen`` has it; tests use fakes)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...
    def send_signal(self, sig: int) -> None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def kill(self) -> None: ...


Spawn = Callable[..., Process]  # called as subprocess.Popen(cmd, cwd=..., env=..., ...)


@dataclass(frozen=True)
class Restart:
    """A replica that had exited with ``code`` and was started again."""

    name: str
    code: int


@dataclass(frozen=True)
class ChildStatus:
    """One child as ``status()`` reports it."""

    pid: int
    running: bool
    restarts: int  # how often a replica was started again (HAProxy: always 0)
    port: int | None  # a replica's port; None for HAProxy


class Supervisor:
    """The children of one ``serve`` run: ``replicas`` app processes and one HAProxy.

    ``start`` brings them up, ``poll`` keeps them up (it restarts every replica that exited and
    fails when HAProxy did), ``stop`` ends them, ``status`` says how each is.
    """

    def __init__(
        self,
        root: Path,
        run_dir: Path,
        replicas: list[Replica],
        haproxy: tuple[str, Path],
        env: dict[str, str] | None = None,
        *,
        spawn: Spawn = subprocess.Popen,
        health: Callable[[str], bool] = healthy,
    ) -> None:
        """
        Args:
            root: the checkout the replicas run ``app.py`` from.
            run_dir: where each child's log and ``replicas.json`` go.
            replicas: the app processes to keep running.
            haproxy: the executable and its rendered config.
            env: the replicas' environment (``child_env()``).
            spawn: starts a child (``subprocess.Popen``); health: whether a URL answers.
        """
        self.root, self.run_dir, self.replicas = root, run_dir, replicas
        self.haproxy, self.env = haproxy, env
        self._spawner, self._healthy = spawn, health
        self._procs: dict[str, Process] = {}
        self._restarts: dict[str, int] = {r.name: 0 for r in replicas}

    def _spawn(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
        with (self.run_dir / f"{name}.log").open("ab") as log:
            self._procs[name] = self._spawner(
                cmd,
                cwd=self.root,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,
                start_new_session=True,
            )
        self._write_state()

    def _start_replica(self, replica: Replica) -> None:
        """``streamlit run app.py`` on 127.0.0.1:port, after its model preload (``replica``)."""
        flags = {
            "server.port": replica.port,
            "server.address": "127.0.0.1",
            "server.headless": "true",
            "browser.gatherUsageStats": "false",
        }
        cmd = [
            sys.executable,
            "-m",
            "viz_transformer.serve.replica",
            "app.py",
            *(f"--{k}={v}" for k, v in flags.items()),
        ]
        self._spawn(replica.name, cmd, self.env)

    def _write_state(self) -> None:
        """``replicas.json`` in the run folder: each child's pid and port (tests and tools)."""
        ports = {r.name: r.port for r in self.replicas}
        state = {n: {"pid": p.pid, "port": ports.get(n)} for n, p in self._procs.items()}
        (self.run_dir / "replicas.json").write_text(json.dumps(state, indent=1))

    def start(self, front: str, timeout: float, stopping: Callable[[], bool]) -> bool:
        """Every replica, once all answer their health check HAProxy (``-db``, foreground),
        until ``front`` (HAProxy's URL) answers too.

        Returns:
            True when all are up; False when ``stopping()`` turned true first.

        Raises:
            RuntimeError: a child exited, or a replica was not healthy within ``timeout`` s.
        """
        for replica in self.replicas:
            self._start_replica(replica)
        self._wait_healthy(timeout, stopping)
        if stopping():
            return False
        self._spawn("haproxy", [self.haproxy[0], "-db", "-f", str(self.haproxy[1])])
        while not stopping() and not self._healthy(front):
            self._check_alive()
            time.sleep(POLL_S)
        return not stopping()

    def _wait_healthy(self, timeout: float, stopping: Callable[[], bool]) -> None:
        deadline = time.monotonic() + timeout
        waiting = list(self.replicas)
        while waiting and not stopping():
            self._check_alive()
            waiting = [r for r in waiting if not self._healthy(r.url)]
            if waiting and time.monotonic() > deadline:
                names = ", ".join(r.name for r in waiting)
                raise RuntimeError(f"{names} not healthy after {timeout:.0f} s; see {self.run_dir}")
            time.sleep(POLL_S)

    def _check_alive(self) -> None:
        """Raises RuntimeError naming the first child that exited (with its log)."""
        for name, proc in self._procs.items():
            if proc.poll() is not None:
                log = self.run_dir / f"{name}.log"
                raise RuntimeError(f"{name} exited with code {proc.returncode}; see {log}")

    def poll(self) -> list[Restart]:
        """One round of supervision: every replica that exited is started again.

        Returns:
            The restarts made this round (none when all run).

        Raises:
            RuntimeError: HAProxy exited (the students' one address is gone).
        """
        if self._procs["haproxy"].poll() is not None:
            raise RuntimeError(f"haproxy exited; see {self.run_dir / 'haproxy.log'}")
        restarts = []
        for replica in self.replicas:
            code = self._procs[replica.name].poll()
            if code is not None:
                self._restarts[replica.name] += 1
                self._start_replica(replica)
                restarts.append(Restart(replica.name, code))
        return restarts

    def status(self) -> dict[str, ChildStatus]:
        """Each child started so far: pid, whether it runs, restarts, port."""
        ports = {r.name: r.port for r in self.replicas}
        return {
            name: ChildStatus(
                proc.pid, proc.poll() is None, self._restarts.get(name, 0), ports.get(name)
            )
            for name, proc in self._procs.items()
        }

    def stop(self) -> list[str]:
        """SIGTERM to every child, SIGKILL to those still running after ``STOP_GRACE_S``.

        HAProxy first: it closes the students' connections, so no replica waits on one.
        Returns the names of the children that had to be killed.
        """
        for name in sorted(self._procs, key=lambda n: n != "haproxy"):
            if self._procs[name].poll() is None:
                self._procs[name].send_signal(signal.SIGTERM)
        deadline, killed = time.monotonic() + STOP_GRACE_S, []
        for name, proc in self._procs.items():
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


STAT_HEADER = "# "  # ``show stat`` starts with "# pxname,svname,...": the column names


def parse_stat(text: str) -> list[dict[str, str]]:
    """HAProxy's ``show stat`` CSV as one dict per row, keyed by the header's column names
    (their order and number change between HAProxy versions)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith(STAT_HEADER):
        first = lines[0][:40] if lines else "nothing"
        raise ValueError(f"not HAProxy's show stat: it starts with {first!r}, not '# pxname'")
    names = lines[0].removeprefix(STAT_HEADER).rstrip(",").split(",")
    return [dict(zip(names, row, strict=False)) for row in csv.reader(lines[1:])]


def replica_states(stats_socket: Path) -> dict[str, str]:
    """Each replica's state as HAProxy sees it (``UP``, ``DOWN``, ...), from its admin socket."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(2)
        s.connect(str(stats_socket))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return server_states(parse_stat(data.decode()), "replicas")


def server_states(rows: list[dict[str, str]], backend: str) -> dict[str, str]:
    """``{server: status}`` of ``backend``'s servers in ``parse_stat`` rows (not the
    ``BACKEND`` summary row)."""
    return {
        r["svname"]: r["status"]
        for r in rows
        if r["pxname"] == backend and r["svname"] not in ("BACKEND", "FRONTEND")
    }
