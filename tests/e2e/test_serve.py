"""A classroom behind HAProxy (issue 27): ``python -m viz_transformer serve --replicas 2``, browsers
on both replicas, one replica killed with SIGKILL. The students on it get their whole view back
from the URL on the other replica within 10 s; the students on the other replica never notice;
``serve`` restarts the dead one; the protocol load driver runs against it; SIGTERM stops every
child within 10 s."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, WebSocket

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
VIEW = "kind=cross&layer=1&head=3&attn_tab=Maps"  # besides model and sentence
SENTENCES = {"garden": "We talked about the garden all evening.",
             "kitchen": "My friend found the kitchen near the old house.",
             "window": "Nobody wanted to see the window again today.",
             "river": "Yesterday the river was much bigger than I remembered."}  # fmt: skip
# what a student sees of the view, read from the page
READ_VIEW = """() => ({
  model: document.querySelector('input[aria-label="Model"]')?.value ?? null,
  sentence: document.querySelector('textarea')?.value ?? null,
  kind: document.querySelector('[data-testid="stRadio"] input:checked')?.closest('label')
    ?.innerText,
  layer: document.querySelector('input[aria-label="Layer"]')?.value ?? null,
  head: document.querySelector('input[aria-label="Head"]')?.value ?? null,
  tab: document.querySelector('[role="radiogroup"][aria-label="View"] [aria-checked="true"]')
    ?.innerText ?? null,
  charts: [...document.querySelectorAll('.js-plotly-plot')].map(p => p.textContent).join(' '),
  running: document.querySelector('[data-testid="stStatusWidget"]') !== null,
})"""


@dataclass
class Student:
    """A browser context (its own cookies, so its own replica) on one view."""

    marker: str
    page: Page
    sockets: list[str] = field(default_factory=list)  # "open" / "close" of its websockets

    def view(self) -> dict[str, object]:
        return self.page.evaluate(READ_VIEW)

    def replica(self) -> str | None:
        cookies = {c["name"]: c["value"] for c in self.page.context.cookies()}
        return cookies.get("VTREPLICA")


@pytest.fixture(scope="module")
def classroom(tmp_path_factory: pytest.TempPathFactory, serve_replicas) -> Iterator[object]:
    """Two replicas of the app behind HAProxy for the module (``serve_replicas``)."""
    with serve_replicas("serve-test", tmp_path_factory.mktemp("serve")) as room:
        yield room


def _student(browser: Browser, url: str, marker: str) -> Student:
    page = browser.new_context(viewport={"width": 1400, "height": 2000}).new_page()
    page.set_default_timeout(90_000)
    student = Student(marker, page)

    def opened(ws: WebSocket) -> None:
        student.sockets.append("open")
        ws.on("close", lambda _: student.sockets.append("close"))

    page.on("websocket", opened)
    page.goto(f"{url}/attention_maps?model=paper-en-pt&sentence={SENTENCES[marker]}&{VIEW}")
    _wait_for_view(student, time.monotonic() + 90)
    return student


def _expected(student: Student) -> dict[str, object]:
    return {"sentence": SENTENCES[student.marker], "kind": "Encoder-decoder (cross) attention",
            "layer": "1", "head": "3", "tab": "Maps"}  # fmt: skip


def _wait_for_view(student: Student, deadline: float) -> dict[str, object]:
    """Until the page shows the student's whole view, drawn, with no run in progress."""
    want = _expected(student)
    while True:
        view = student.view()
        shown = {k: view[k] for k in want}
        done = shown == want and not view["running"] and student.marker in view["charts"]
        if done and "paper-en-pt" in (view["model"] or ""):
            return view
        assert time.monotonic() < deadline, f"view not back: {view} != {want}"
        time.sleep(0.2)


def test_a_replica_dies_and_its_students_get_their_view_back(classroom, browser):
    students, replicas = [], set()
    for marker in SENTENCES:  # leastconn alternates; open students until both replicas have one
        students.append(_student(browser, classroom.url, marker))
        replicas.add(students[-1].replica())
        if replicas == {"r1", "r2"}:
            break
    assert replicas == {"r1", "r2"}, [s.replica() for s in students]
    victim = students[-1].replica()
    hit = [s for s in students if s.replica() == victim]
    spared = [s for s in students if s.replica() != victim]
    old_pid = classroom.children()[victim]

    os.kill(old_pid, signal.SIGKILL)
    killed = time.monotonic()
    while classroom.states()[victim] != "DOWN":
        assert time.monotonic() - killed < 3, "the dead replica is still in rotation after 3 s"
        time.sleep(0.1)
    for student in hit:  # reconnected to the live replica, which rebuilt the view from the URL
        _wait_for_view(student, killed + 10)
        assert student.sockets[:3] == ["open", "close", "open"]
        assert student.replica() != victim and "/attention_maps?" in student.page.url
    assert time.monotonic() - killed < 10
    for student in spared:  # same websocket all along, and it still works
        assert student.sockets == ["open"]
        box = student.page.locator("textarea").first
        box.fill("Where is the train station?")
        box.press("Control+Enter")
        student.page.wait_for_function(
            "() => [...document.querySelectorAll('.js-plotly-plot')]"
            ".some(p => p.textContent.includes('station'))"
        )
        assert student.sockets == ["open"]
    # serve restarts the dead replica; HAProxy takes it back once it has loaded the model
    deadline = time.monotonic() + 180
    while classroom.children()[victim] == old_pid or classroom.states()[victim] != "UP":
        assert time.monotonic() < deadline, classroom.states()
        time.sleep(0.5)
    for student in students:
        student.page.context.close()


def test_the_protocol_load_driver_measures_the_classroom(classroom, tmp_path):
    out = tmp_path / "ws.json"
    cmd = [sys.executable, "-m", "bench.classroom_ws", "--url", classroom.url, "--sessions", "4",
           "--json", str(out)]  # fmt: skip
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(out.read_text())
    assert result["sessions"] == 4 and result["errors"] == []
    assert all(s["ok"] and 0 < s["seconds"] < 120 for s in result["per_session"])
    assert result["server_processes"] == 4  # serve, two replicas, HAProxy
    assert 0 < result["server_cpu_s_per_run"] < 30
    assert "p95" in run.stdout and result["p50_s"] <= result["p95_s"]


def test_sigterm_stops_every_child_within_10_s(classroom):
    pids = [classroom.proc.pid, *classroom.children().values()]
    classroom.proc.send_signal(signal.SIGTERM)
    start = time.monotonic()
    assert classroom.proc.wait(timeout=10) == 0
    for pid in pids:
        while Path(f"/proc/{pid}").exists() and _state(pid) != "Z":
            assert time.monotonic() - start < 10, f"process {pid} outlived serve's stop"
            time.sleep(0.1)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"
