"""Issue 55, the class's keys in Chromium: the teacher's one-time link opened in a persistent
profile, the page reloaded, the class left; then every file of the profile read (the History
database's URLs, and each file's bytes for the key and for every token the store knows): no key
anywhere, and each token found is used or ended. A new teacher's key, from the page's button or
from ``class rotate``, ends every other open Teacher page within one redraw."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from playwright.sync_api import Page, Playwright, expect

import viz_transformer as vt
from viz_transformer.classroom.schema import passes
from viz_transformer.testing import chromium

pytestmark = pytest.mark.slow

TOUR = "paper_tour"
ROOT = Path(__file__).resolve().parents[2]
REDRAW_MS = 3000 + 7000  # the live view's redraw (class_board.REFRESH_S) and a busy machine's run
TOKEN = re.compile(rb"[A-Za-z0-9_-]{43}")  # a pass's token (passes.new_token)


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory, serve_app) -> Iterator[tuple[str, str]]:
    """The app on a class store of its own: (app URL, database URL)."""
    db = f"sqlite:///{tmp_path_factory.mktemp('teacher-keys') / 'classes.sqlite3'}"
    with serve_app("teacher-keys", {"VT_DATABASE_URL": db}) as url:
        yield url, db


@pytest.fixture(scope="module")
def pw() -> Iterator[Playwright]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


def _class_board(page: Page, code: str) -> None:
    expect(page.get_by_role("heading", name=f"Class code {code}")).to_be_visible()
    page.wait_for_selector(".js-plotly-plot")
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")


def _profile_files(folder: Path) -> Iterator[tuple[Path, bytes]]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with contextlib.suppress(OSError):
                yield path, path.read_bytes()


def _usable(store: vt.ClassStore, code: str, token: str) -> bool:
    """Whether ``token`` still opens class ``code``: as a session, or as a one-time link."""
    for use in (store.access.check_key, store.access.open_link):
        try:
            use(code, token)
        except PermissionError:
            continue
        return True
    return False


def test_a_persistent_profile_keeps_no_usable_secret_after_the_link_and_leave(room, pw, tmp_path):
    url, db = room
    store = vt.classroom(db)
    code, key = store.teacher.create(TOUR)
    once = store.access.one_time_link(code, key)
    profile = tmp_path / "profile"
    context = pw.chromium.launch_persistent_context(
        str(profile),
        executable_path=chromium.CHROMIUM,
        args=chromium.CHROMIUM_ARGS,
        viewport={"width": 1280, "height": 900},
    )
    page = context.new_page()
    page.set_default_timeout(90_000)
    page.goto(f"{url}/teacher?class={code}&once={once}")
    page.wait_for_function("() => !location.search.includes('once=')")
    _class_board(page, code)
    [cookie] = [c for c in context.cookies() if c["name"] == f"vt_class_{code}"]
    session = cookie["value"]
    assert session not in (key, once) and store.access.check_key(code, session) == "teacher"
    page.reload()  # F5: the session kept by this browser opens the class again
    _class_board(page, code)
    page.get_by_role("button", name="Leave this class on this browser").click()
    expect(page.get_by_text(f"You left class {code} on this browser")).to_be_visible()
    page.wait_for_function(f"() => !document.cookie.includes('vt_class_{code}')")
    page.go_back()  # the class's URL again, in the same session: its access has ended
    expect(page.get_by_text(f"access to class {code} has ended")).to_be_visible()
    assert page.locator(".js-plotly-plot").count() == 0
    page.goto(f"{url}/teacher?class={code}")  # a new session: no cookie left to read
    expect(page.get_by_text("needs the teacher's one-time link")).to_be_visible()
    assert page.locator(".js-plotly-plot").count() == 0
    page.goto(f"{url}/teacher?class={code}&once={once}")  # the link from the history
    expect(page.get_by_text("already used")).to_be_visible()
    expect(page.get_by_text(f"class link {code}")).to_be_visible()
    context.close()  # writes History, Cookies, Sessions... to the profile

    history = sqlite3.connect(f"file:{profile / 'Default' / 'History'}?mode=ro", uri=True)
    urls = [row[0] for row in history.execute("SELECT url FROM urls")]
    history.close()
    assert any(f"class={code}" in u for u in urls), urls  # the visits are there
    assert not [u for u in urls if key in u or "key=" in u], urls
    linked = [m for u in urls for m in re.findall(r"once=([\w-]+)", u)]
    assert linked and not [t for t in linked if _usable(store, code, t)], linked
    with store.engine.connect() as conn:  # every token the store made for the class
        made = set(conn.execute(sa.select(passes.c.token_hash).where(passes.c.code == code)))
    made = {row[0] for row in made}
    found: dict[str, list[str]] = {}
    for path, data in _profile_files(profile):
        for secret in (key, session, once):
            for form in (secret.encode(), secret.encode("utf-16-le")):
                if form in data:
                    found.setdefault(secret, []).append(str(path.relative_to(profile)))
        for token in {t.decode() for t in TOKEN.findall(data)}:
            if hashlib.sha256(token.encode()).hexdigest() in made:
                found.setdefault(token, []).append(str(path.relative_to(profile)))
    assert key not in found, found[key]  # the key never reached the browser
    assert once in found  # the used link is kept (History at least): it must be worthless
    assert not [t for t in found if t != key and _usable(store, code, t)], found


def _teacher(pw_browser, url: str, code: str, once: str) -> Page:
    page = pw_browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(90_000)
    page.goto(f"{url}/teacher?class={code}&once={once}")
    page.wait_for_function("() => !location.search.includes('once=')")
    _class_board(page, code)
    return page


def test_a_new_key_from_the_page_or_the_command_line_ends_every_other_open_page(room, pw):
    url, db = room
    store = vt.classroom(db)
    code, key = store.teacher.create(TOUR)
    browser = chromium.launch(pw)
    try:
        here, there = (
            _teacher(browser, url, code, store.access.one_time_link(code, key)) for _ in "ab"
        )
        here.get_by_text("More controls").click()
        sure = here.get_by_role("checkbox", name=re.compile("I want a new teacher's key"))
        here.get_by_text("I want a new teacher's key").click()
        expect(sure).to_be_checked()
        here.get_by_role("button", name="Change the teacher's key").click()
        expect(there.get_by_text("has ended")).to_be_visible(timeout=REDRAW_MS)
        assert there.locator(".js-plotly-plot").count() == 0
        new = here.locator('[data-testid="stCode"]').first.inner_text().strip()
        assert store.access.check_key(code, new) == "teacher"
        here.reload()  # this browser's new session, kept in the cookie
        _class_board(here, code)
        env = {**os.environ, "VT_TEACHER_KEY": new, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run(
            [sys.executable, "-m", "viz_transformer", "class", "rotate", code, "--db", db],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0 and "new teacher key: " in done.stdout, done.stderr
        expect(here.get_by_text("has ended")).to_be_visible(timeout=REDRAW_MS)
        assert here.locator(".js-plotly-plot").count() == 0
        newest = done.stdout.split("new teacher key: ")[1].split()[0]
        link = subprocess.run(
            [
                sys.executable,
                "-m",
                "viz_transformer",
                "class",
                "link",
                code,
                "--db",
                db,
                "--url",
                url,
            ],
            capture_output=True,
            text=True,
            env={**env, "VT_TEACHER_KEY": newest},
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        once = link.stdout.split("once=")[1].strip()
        _teacher(browser, url, code, once)  # a new one-time link opens the class
    finally:
        browser.close()
