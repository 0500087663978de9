"""A class in a real browser behind ``serve --replicas 2`` (issue 33): a student joins with the
class link, answers a ``head`` check by clicking a head, the replica serving them is killed with
SIGKILL, and their step and answer come back on the other replica (the place and the answers are
in the database, not in the dead process); the Teacher page shows the class with its key and
nothing without it; a name with markup runs nothing on either page."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, WebSocket, expect

import viz_transformer as vt

pytestmark = pytest.mark.slow

TOUR = "paper_tour"
XSS = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory, serve_replicas) -> Iterator[object]:
    """Two replicas sharing one SQLite class store, and a class of the built-in lesson."""
    folder = tmp_path_factory.mktemp("lesson-class")
    url = f"sqlite:///{folder / 'classes.sqlite3'}"
    with serve_replicas("lesson-class", folder / "run", {"VT_DATABASE_URL": url}) as served:
        served.store = vt.classroom(url)
        served.code, served.key = served.store.teacher.create(TOUR)
        yield served


def _student(browser: Browser, dialogs: list[str], sockets: list[str] | None = None) -> Page:
    """A browser context of its own (its own replica); alerts go to ``dialogs``, websocket
    openings and closings to ``sockets``."""
    page = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
    page.set_default_timeout(90_000)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    def opened(ws: WebSocket) -> None:
        if sockets is not None:
            sockets.append("open")
            ws.on("close", lambda _: sockets.append("close"))

    page.on("websocket", opened)
    return page


def _join(page: Page, url: str, code: str, name: str) -> str:
    """Open the students' link, type ``name``, join; the token the URL now holds."""
    page.goto(f"{url}/lesson?class={code}")
    page.get_by_label("Your name").fill(name)
    page.get_by_role("button", name="Join", exact=True).click()
    page.wait_for_url("**student=*")
    return page.url.split("student=")[1].split("&")[0]


def _open_step(page: Page, lesson: vt.Lesson, step: int) -> None:
    for i in range(1, step + 1):
        page.get_by_role("button", name="Next").click()
        expect(page.get_by_role("heading", name=lesson.steps[i].title)).to_be_visible()


def test_a_student_answers_by_clicking_a_head_and_survives_a_killed_replica(room, browser):
    lesson = vt.load_lesson(TOUR)
    step = next(i for i, s in enumerate(lesson.steps) if s.question and s.question.kind == "head")
    right = vt.grade(lesson.steps[step].question, "L0 H0").expected
    dialogs: list[str] = []
    sockets: list[str] = []
    page = _student(browser, dialogs, sockets)
    token = _join(page, room.url, room.code, XSS)
    expect(page.get_by_text(XSS)).to_be_visible()  # the name shown as typed
    _open_step(page, lesson, step)
    page.get_by_role("radio", name=right, exact=True).click()  # a head of the grid
    expect(page.get_by_text(f"Right: {right}")).to_be_visible()
    assert room.store.students.place(room.code, token) == step
    [stored] = room.store.students.answers_of(room.code, token)
    assert (stored.step, stored.answer, stored.grade.correct) == (step, right, True)

    replica = {c["name"]: c["value"] for c in page.context.cookies()}["VTREPLICA"]
    victim = room.children()[replica]
    assert sockets == ["open"]
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    while sockets != ["open", "close", "open"]:  # the browser reconnects: a new session
        assert time.monotonic() - killed < 30, sockets
        page.wait_for_timeout(200)
    page.wait_for_timeout(500)
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    # the new session's run drew the page again (a run removes what it did not draw): the
    # place and the answer were read back from the database
    expect(page.get_by_role("heading", name=lesson.steps[step].title)).to_be_visible()
    expect(page.get_by_text(f"Right: {right}")).to_be_visible(timeout=30_000)
    expect(page.get_by_text(f"Your answer: {right}")).to_be_visible()
    assert time.monotonic() - killed < 30
    assert _gone(victim)  # the process that held the session is dead
    assert f"student={token}" in page.url and dialogs == []
    assert page.locator("img[src='x']").count() == 0
    page.context.close()


def _gone(pid: int) -> bool:
    """Whether process ``pid`` is dead (reaped, or a zombie its parent has not reaped yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_the_teacher_page_shows_the_class_with_its_one_time_link_only(room, browser):
    dialogs: list[str] = []
    page = _student(browser, dialogs)
    _join(page, room.url, room.code, "Ada")
    lesson = vt.load_lesson(TOUR)
    page.goto(f"{room.url}/teacher?class={room.code}")  # no link
    expect(page.get_by_text("needs the teacher's one-time link")).to_be_visible()
    page.goto(f"{room.url}/teacher?class={room.code}&once=guess")
    expect(page.get_by_text("not a one-time link of class")).to_be_visible()
    page.wait_for_timeout(1500)
    assert page.locator(".js-plotly-plot").count() == 0
    assert page.get_by_text(lesson.title).count() == 0
    once = room.store.access.one_time_link(room.code, room.key)
    page.goto(f"{room.url}/teacher?class={room.code}&once={once}")
    expect(page.get_by_role("heading", name=f"Class code {room.code}")).to_be_visible()
    expect(page.get_by_text(lesson.title)).to_be_visible()
    expect(page.locator(".js-plotly-plot")).to_have_count(1, timeout=60_000)
    students = page.locator('[data-testid="stMetric"]').filter(has_text="students")
    expect(students).to_contain_text(str(len(room.store.teacher.roster(room.code, room.key))))
    page.wait_for_timeout(4000)  # a live redraw of the fragment with the names (the XSS one
    # too when the other test ran first)
    assert dialogs == [] and page.locator("img[src='x']").count() == 0
    page.context.close()
