"""The serve supervisor without real processes: its restart policy on fake children, and HAProxy's
``show stat`` CSV read by column name (a real HAProxy 2.6 answer, and the same with its columns
in another order)."""

from __future__ import annotations

import csv
import io
import itertools
import json
import signal
import subprocess
from pathlib import Path

import pytest

from viz_transformer.serve.config import Replica
from viz_transformer.serve.supervisor import (
    ChildStatus,
    Restart,
    Supervisor,
    parse_stat,
    server_states,
)

SHOW_STAT = Path(__file__).with_name("data") / "haproxy-2.6-show-stat.csv"
REPLICAS = [Replica("r1", 41001), Replica("r2", 41002)]
FRONT = "http://127.0.0.1:8501"


class FakeProcess:
    """A child that runs until ``exit`` is called; one started with ``stubborn`` ignores
    SIGTERM (only ``kill`` ends it)."""

    pids = itertools.count(1000)

    def __init__(
        self, cmd: list[str], name: str, stubborn: bool, signals: list[tuple[str, int]]
    ) -> None:
        self.cmd, self.name, self.pid, self.returncode = cmd, name, next(self.pids), None
        self.stubborn, self.signals = stubborn, signals

    def exit(self, code: int) -> None:
        self.returncode = code

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        self.signals.append((self.name, sig))
        if not self.stubborn:
            self.exit(-sig)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.cmd, timeout or 0)
        return self.returncode

    def kill(self) -> None:
        self.signals.append((self.name, signal.SIGKILL))
        self.exit(-signal.SIGKILL)


class Children:
    """The ``spawn`` of a supervisor under test: every child it started, in order."""

    def __init__(self, stubborn: frozenset[str] = frozenset()) -> None:
        self.started: list[FakeProcess] = []
        self.signals: list[tuple[str, int]] = []
        self.stubborn = stubborn

    def __call__(self, cmd: list[str], **_: object) -> FakeProcess:
        port = next((a.split("=")[1] for a in cmd if a.startswith("--server.port=")), None)
        name = "haproxy" if cmd[0] == "haproxy" else f"r{int(port) - 41000}"
        proc = FakeProcess(cmd, name, name in self.stubborn, self.signals)
        self.started.append(proc)
        return proc

    def latest(self, port_or_haproxy: str) -> FakeProcess:
        return [p for p in self.started if port_or_haproxy in " ".join(p.cmd)][-1]


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("viz_transformer.serve.supervisor.POLL_S", 0.0)
    monkeypatch.setattr("viz_transformer.serve.supervisor.STOP_GRACE_S", 0.0)


def started(tmp_path: Path, children: Children) -> Supervisor:
    sup = Supervisor(
        tmp_path, tmp_path, REPLICAS, ("haproxy", tmp_path / "haproxy.cfg"),
        spawn=children, health=lambda url: True,
    )  # fmt: skip
    assert sup.start(FRONT, timeout=5, stopping=lambda: False)
    return sup


def test_start_runs_every_replica_then_haproxy_and_writes_their_pids(tmp_path, fast):
    children = Children()
    sup = started(tmp_path, children)
    assert [p.cmd[0] for p in children.started][-1] == "haproxy"
    assert ["--server.port=41001" in p.cmd for p in children.started] == [True, False, False]
    state = json.loads((tmp_path / "replicas.json").read_text())
    assert state == {
        "r1": {"pid": children.started[0].pid, "port": 41001},
        "r2": {"pid": children.started[1].pid, "port": 41002},
        "haproxy": {"pid": children.started[2].pid, "port": None},
    }
    assert sup.status()["r2"] == ChildStatus(children.started[1].pid, True, 0, 41002)


def test_poll_restarts_only_the_replica_that_exited_each_time_it_does(tmp_path, fast):
    children = Children()
    sup = started(tmp_path, children)
    assert sup.poll() == [] and len(children.started) == 3  # all running: nothing started
    r1, r2 = children.latest("41001"), children.latest("41002")
    r2.exit(-9)
    assert sup.poll() == [Restart("r2", -9)]
    new = children.latest("41002")
    assert new is not r2 and new.cmd == r2.cmd and children.latest("41001") is r1
    assert sup.poll() == []  # the new one runs: no second restart
    new.exit(1)
    assert sup.poll() == [Restart("r2", 1)]
    status = sup.status()
    assert status["r2"].restarts == 2 and status["r2"].running and status["r1"].restarts == 0
    pids = json.loads((tmp_path / "replicas.json").read_text())
    assert pids["r2"]["pid"] == children.latest("41002").pid  # replicas.json follows


def test_poll_fails_when_haproxy_exits(tmp_path, fast):
    children = Children()
    sup = started(tmp_path, children)
    children.latest("haproxy").exit(0)
    with pytest.raises(RuntimeError, match=r"haproxy exited; see .*haproxy\.log"):
        sup.poll()


def test_start_fails_on_a_replica_that_exits_or_stays_unhealthy(tmp_path, fast):
    children = Children()
    sup = Supervisor(tmp_path, tmp_path, REPLICAS, ("haproxy", tmp_path / "h.cfg"),
                     spawn=children, health=lambda url: url.endswith("41001"))  # fmt: skip
    with pytest.raises(RuntimeError, match="r2 not healthy after 0 s"):
        sup.start(FRONT, timeout=0, stopping=lambda: False)
    assert all(p.cmd[0] != "haproxy" for p in children.started)

    def exits(url: str) -> bool:
        children.latest("41001").exit(3)
        return False

    children = Children()
    sup = Supervisor(tmp_path, tmp_path, REPLICAS, ("haproxy", tmp_path / "h.cfg"),
                     spawn=children, health=exits)  # fmt: skip
    with pytest.raises(RuntimeError, match=r"r1 exited with code 3; see .*r1\.log"):
        sup.start(FRONT, timeout=60, stopping=lambda: False)


def test_a_stop_during_start_starts_no_haproxy(tmp_path, fast):
    children = Children()
    sup = Supervisor(tmp_path, tmp_path, REPLICAS, ("haproxy", tmp_path / "h.cfg"),
                     spawn=children, health=lambda url: False)  # fmt: skip
    assert not sup.start(FRONT, timeout=60, stopping=lambda: True)
    assert [p.cmd[0] for p in children.started if p.cmd[0] == "haproxy"] == []


def test_stop_ends_haproxy_first_and_kills_what_ignores_sigterm(tmp_path, fast):
    children = Children(stubborn=frozenset({"r2"}))
    sup = started(tmp_path, children)
    assert sup.stop() == ["r2"]
    assert children.signals[0] == ("haproxy", signal.SIGTERM)
    assert [name for name, sig in children.signals if sig == signal.SIGKILL] == ["r2"]
    assert not any(s.running for s in sup.status().values())


def test_show_stat_is_read_by_column_name():
    text = SHOW_STAT.read_text()
    rows = parse_stat(text)
    assert server_states(rows, "replicas") == {"r1": "UP", "r2": "DOWN"}
    assert [r["svname"] for r in rows] == ["FRONTEND", "r1", "r2", "BACKEND"]
    assert rows[1]["check_status"] == "L7OK" and rows[2]["check_status"] == "L4CON"
    # the same table with its columns in reverse order (another HAProxy version's layout)
    header, *body = [line.rstrip(",") for line in text.splitlines() if line]
    names = header.removeprefix("# ").split(",")
    table = [names, *csv.reader(body)]
    width = len(names)
    flipped = io.StringIO()
    writer = csv.writer(flipped, lineterminator="\n")
    for i, row in enumerate(table):
        row = (row + [""] * width)[:width][::-1]
        writer.writerow(row if i else ["# " + row[0], *row[1:]])
    assert server_states(parse_stat(flipped.getvalue()), "replicas") == {"r1": "UP", "r2": "DOWN"}


def test_anything_but_show_stat_is_refused():
    with pytest.raises(ValueError, match="not HAProxy's show stat"):
        parse_stat("Unknown command. Please enter one of the following commands only :\n")
    with pytest.raises(ValueError, match="nothing"):
        parse_stat("")
