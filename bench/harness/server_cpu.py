"""CPU seconds spent by the server's processes, read from ``/proc`` (Linux).

The processes of a server at a URL: the one listening on its port and, when that one was started
by ``python -m viz_transformer serve`` (HAProxy in front of replicas), every process under that
``serve`` too: the replicas, HAProxy and ``serve`` itself.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
TICK = os.sysconf("SC_CLK_TCK")


def _listening_inodes(port: int) -> set[str]:
    found = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                found.add(cols[9])
    return found


def _pids() -> list[int]:
    return [int(p.name) for p in PROC.iterdir() if p.name.isdigit()]


def listener(port: int) -> int | None:
    """The pid of the process listening on TCP ``port``, None when none of ours is."""
    inodes = {f"socket:[{i}]" for i in _listening_inodes(port)}
    for pid in _pids():
        try:
            fds = list((PROC / str(pid) / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in inodes:
                    return pid
            except OSError:
                continue
    return None


def _parent(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> list[str]:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def descendants(root: int) -> set[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        parent = _parent(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, []))
    return found


def server_processes(port: int) -> set[int]:
    """The processes serving ``port`` (see the module's docstring); empty when none listens."""
    pid = listener(port)
    if pid is None:
        return set()
    parent = _parent(pid)
    cmd = _cmdline(parent) if parent else []
    if "viz_transformer" in cmd and "serve" in cmd:
        return descendants(parent)
    return {pid}


def cpu_seconds(pids: set[int]) -> float:
    """User + system CPU seconds of ``pids`` so far (processes gone meanwhile count 0)."""
    total = 0
    for pid in pids:
        try:
            fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / TICK
