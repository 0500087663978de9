"""Issue 55 on the Teacher page in AppTest: a one-time link opens the class once (a second use
says how to get a new one), "Change the teacher's key" ends every other open Teacher page at its
next redraw and keeps this one, "Leave this class on this browser" ends this browser's session
and tells the browser to drop its cookie, and the cookie is named by the code as stored.
(In Chromium with a persistent profile: tests/e2e/test_teacher_keys.py.)"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

TEACHER, TOUR = "pages/teacher.py", "paper_tour"


def _click(at: AppTest, label: str) -> None:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception


def _said(at: AppTest) -> str:
    kinds = ("error", "success", "info", "markdown")
    return " ".join(str(e.value) for k in kinds for e in at.get(k)).replace("\\", "")


def _scripts(at: AppTest) -> str:
    return "\n".join(h.proto.body for h in at.get("html") if "<script>" in h.proto.body)


def test_a_one_time_link_used_twice_says_so_and_how_to_get_a_new_one(store, open_via_app):
    code, key = store.teacher.create(TOUR)
    once = store.access.one_time_link(code, key)
    first = open_via_app(TEACHER, {"class": code.lower(), "once": once})  # the code as typed
    assert first.get("plotly_chart") and not first.error
    assert f'"vt_class_{code}"' in _scripts(first)  # the cookie: the code as stored
    again = open_via_app(
        TEACHER, {"class": code, "once": once}
    )  # the link from the browser's history
    assert again.error and not again.get("plotly_chart")
    said = _said(again)
    assert "already used" in said and f"class link {code}" in said


def test_changing_the_key_on_the_page_ends_every_other_page_and_keeps_this_one(store, open_via_app):
    code, key = store.teacher.create(TOUR)
    here = open_via_app(TEACHER, {"class": code, "once": store.access.one_time_link(code, key)})
    there = open_via_app(TEACHER, {"class": code, "once": store.access.one_time_link(code, key)})
    assert not there.error and there.get("plotly_chart")
    assert next(b for b in here.button if b.label == "Change the teacher's key").disabled
    here.checkbox(key="class-rotate-ok").check().run()
    _click(here, "Change the teacher's key")
    with pytest.raises(PermissionError):
        store.teacher.pause(code, key)  # the old key opens nothing
    [new] = [c.value for c in here.get("code") if c.value != key and "http" not in c.value]
    store.teacher.pause(code, new)  # the key shown once is the class's key now
    here.run()
    assert here.get("plotly_chart") and not here.error and "**Paused**" in _said(here)
    assert here.session_state["_teacher_keys"][code] in _scripts(here)  # its new session kept
    there.run()  # its next redraw
    assert there.error and not there.get("plotly_chart") and "has ended" in _said(there)
    assert "max-age=0" in _scripts(there)  # and its browser told to drop the cookie


def test_leaving_the_class_on_this_browser_ends_its_session(store, open_via_app):
    code, key = store.teacher.create(TOUR)
    at = open_via_app(TEACHER, {"class": code, "once": store.access.one_time_link(code, key)})
    session = at.session_state["_teacher_keys"][code]
    _click(at, "Leave this class on this browser")
    assert "class" not in at.query_params and f"You left class {code}" in _said(at)
    assert f'"vt_class_{code}"' in _scripts(at) and "max-age=0" in _scripts(at)
    assert code not in at.session_state["_teacher_keys"]
    with pytest.raises(PermissionError, match="has ended"):
        store.access.check_key(code, session)  # its cookie, if a browser kept it, opens nothing
    assert store.access.check_key(code, key) == "teacher"  # the key and the class stay
