"""The teacher's controls in AppTest: each clicked on the Teacher page, then seen on a student's
page opened as another session would (another replica: only the database is shared); the
one-time link out of the address bar; a read-only link that draws no control. (The student page
redrawing by itself within 2 s: tests/e2e/test_teacher.py.)"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.classroom import links as class_links

LESSON, TEACHER, TOUR = "pages/lesson.py", "pages/teacher.py", "paper_tour"
TEXTS = ("markdown", "caption", "success", "error", "warning", "info", "title", "header")


def _texts(at: AppTest) -> str:
    return "\n".join(str(e.value) for kind in TEXTS for e in at.get(kind))


def _teacher(
    store: vt.ClassStore, open_via_app: Callable[..., AppTest]
) -> tuple[AppTest, str, str, str]:
    code, key = store.teacher.create(TOUR)
    token = store.students.join(code, "Ada Lovelace")
    store.students.move(code, token, 0)
    at = open_via_app(TEACHER, {"class": code, "once": store.access.one_time_link(code, key)})
    assert not at.error, [e.value for e in at.error]
    return at, code, key, token


def _remove_bo(store: vt.ClassStore, at: AppTest, code: str, key: str) -> str:
    """Bo joins, and the teacher removes Bo on the page; Bo's token."""
    bo = store.students.join(code, "Bo")
    at.run()
    bo_id = int(store.teacher.roster(code, key).set_index("student").loc["Bo", "id"])
    at.selectbox(key="class-remove").set_value(bo_id).run()
    _click(at, "Remove")
    return bo


def _click(at: AppTest, label: str) -> None:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, at.exception


def _scripts(at: AppTest) -> str:
    return "\n".join(h.proto.body for h in at.get("html") if "<script>" in h.proto.body)


def test_a_one_time_link_leaves_the_address_bar_and_a_session_not_the_key_is_kept(
    store, open_via_app
):
    at, code, key, _ = _teacher(store, open_via_app)
    # the browser keeps a session (a cookie, for a reload) and loads the page again without the
    # link's token, replacing the history entry (tests/e2e/test_class_room.py walks the history)
    assert f'"vt_class_{code}"' in _scripts(at) and "location.replace" in _scripts(at)
    session = at.session_state["_teacher_keys"][code]
    assert session != key and key not in _scripts(at) and session in _scripts(at)
    assert store.access.check_key(code, session) == "teacher"
    at.run()  # a redraw without the key in the URL: still the class
    assert not at.error and at.get("plotly_chart") and f"Class code **{code}**" in _texts(at)
    fresh = open_via_app(TEACHER, {"class": code})  # a new session without the key sees nothing
    assert fresh.error and not fresh.get("plotly_chart")


def test_pause_shows_only_eyes_on_the_teacher_until_resume(store, open_via_app):
    at, code, _, token = _teacher(store, open_via_app)
    _click(at, "Pause")
    assert store.teacher.controls(code).paused and "**Paused**" in _texts(at)
    student = open_via_app(LESSON, {"class": code, "student": token})
    assert [t.value for t in student.title] == ["Eyes on the teacher"]
    assert not student.header and not student.button and not student.get("radio")
    _click(at, "Resume")
    assert not store.teacher.controls(code).paused
    student.run()
    assert student.header[0].value == vt.load_lesson(TOUR).steps[0].title


def test_a_pace_holds_students_at_its_step(store, open_via_app):
    at, code, _, token = _teacher(store, open_via_app)
    lesson = vt.load_lesson(TOUR)
    store.students.move(code, token, 3)  # ahead of the class when the pace comes
    at.selectbox(key="class-pace").set_value(2).run()
    assert store.teacher.controls(code).pace == 2 and "up to step 2" in _texts(at)
    student = open_via_app(LESSON, {"class": code, "student": token})  # shown step 2, the pace's
    assert student.header[0].value == lesson.steps[1].title
    assert "Wait for your teacher" in _texts(student)
    assert next(b for b in student.button if b.label == "Next").disabled
    [picker] = [g for g in student.get("button_group") if g.key.startswith("lesson-steps")]
    assert list(picker.options) != [] and len(picker.options) == 2  # steps 1 and 2 only
    at.selectbox(key="class-pace").set_value(0).run()  # every step
    student.run()
    assert "Wait for your teacher" not in _texts(student)
    assert not next(b for b in student.button if b.label == "Next").disabled


def test_hidden_names_show_pseudonyms_on_the_teacher_page(store, open_via_app):
    at, code, key, _ = _teacher(store, open_via_app)
    assert list(at.dataframe[0].value["student"]) == ["Ada Lovelace"]
    at.toggle(key="class-hide-names").set_value(True).run()
    pseudonym = store.teacher.roster(code, key)["pseudonym"][0]
    assert store.teacher.controls(code).hide_names
    assert list(at.dataframe[0].value["student"]) == [pseudonym]
    assert "Ada" not in _texts(at) and at.selectbox(key="class-remove").options == [pseudonym]


def test_remove_and_close(store, open_via_app):
    at, code, key, token = _teacher(store, open_via_app)
    bo = _remove_bo(store, at, code, key)
    assert store.teacher.roster(code, key)["student"].tolist() == ["Ada Lovelace"]
    said = open_via_app(LESSON, {"class": code, "student": bo}).error[0].value
    assert "Your teacher removed you from this class" in said and "unknown" not in said
    assert next(b for b in at.button if b.label == "Close the class").disabled
    at.checkbox(key="class-close-ok").check().run()
    _click(at, "Close the class")
    assert store.teacher.controls(code).closed and "**Closed**" in _texts(at)
    student = open_via_app(LESSON, {"class": code, "student": token})
    assert "closed" in _texts(student) and not student.get("radio")  # no answer box
    joining = open_via_app(LESSON, {"class": code})  # said before a form, nothing about answers
    assert "is closed: it takes no more students" in _texts(joining)
    assert not joining.text_input and "yours are kept" not in _texts(joining)


def test_a_read_only_link_sees_the_class_and_draws_no_control(store, open_via_app):
    at, code, key, _ = _teacher(store, open_via_app)
    _click(at, "Make a read-only link")
    [link] = [c.value for c in at.get("code") if "once=" in c.value and key not in c.value]
    view = open_via_app(TEACHER, {"class": code, "once": link.split("once=")[1]})
    assert not view.error and view.get("plotly_chart")
    assert list(view.dataframe[0].value["student"]) == ["Ada Lovelace"]
    labels = {b.label for b in view.button}
    assert not labels & {"Pause", "Resume", "Remove", "Close the class", "Make a read-only link"}
    assert not view.get("selectbox") and "read-only" in _texts(view)
    assert not any("once=" in str(c.value) for c in view.get("code"))
    labels.discard("Leave this class on this browser")  # the one button a read-only link has
    assert not labels & {"One-time link for another browser", "Change the teacher's key"}


def test_the_lesson_picker_opens_on_the_course_first_lesson_in_course_order(store, open_via_app):
    at = open_via_app(TEACHER, {})
    found = [vt.load_lesson(name) for name in vt.lessons()]
    course = sorted((f for f in found if f.order is not None), key=lambda f: f.order)
    picker = at.selectbox(key="class-lesson")
    assert picker.value == course[0].name  # not the first file name
    shown = [o for o in picker.options if any(o.endswith(f"({f.name})") for f in course)]
    assert shown == [f"{f.title} ({f.name})" for f in course]
    assert list(picker.options[: len(course)]) == shown  # the course first


def test_who_is_where_says_its_title_once_and_last_answer_or_move_not_last_seen(
    store, open_via_app
):
    code, key = store.teacher.create(TOUR)
    store.students.join(code, "Ada")
    for presenter in ("False", "True"):
        once = store.access.one_time_link(code, key)
        at = open_via_app(TEACHER, {"class": code, "once": once, "presenter": presenter})
        titles = [s.value for s in at.subheader] + [e.label for e in at.expander]
        assert titles.count("Who is where") == 1, (presenter, titles)
        columns = list(at.dataframe[0].value.columns)
        assert "last answer or move (UTC)" in columns and "last seen (UTC)" not in columns
    [qr] = at.get("image")
    assert (
        qr.proto.imgs[0].alt
        == f"QR code of the students' link, {class_links('http://localhost:8501', code, '')[0]}"
    )


def test_a_pause_holds_the_students_other_pages_too(store, open_via_app):
    code, key = store.teacher.create(TOUR)
    token = store.students.join(code, "Ada")
    store.teacher.pause(code, key)
    lesson = open_via_app(LESSON, {"class": code, "student": token})
    assert [t.value for t in lesson.title] == ["Eyes on the teacher"]
    lesson.switch_page("pages/home.py").run()  # the sidebar's list of pages
    assert [t.value for t in lesson.title] == ["Eyes on the teacher"]
    assert not lesson.get("plotly_chart") and not lesson.exception
    back = urlencode({"class": code, "student": token})
    linked = open_via_app("pages/attention_maps.py", {"lesson_back": back})  # a step's link
    assert [t.value for t in linked.title] == ["Eyes on the teacher"]
    store.teacher.resume(code, key)
    linked.run()
    assert "Eyes on the teacher" not in [t.value for t in linked.title]


def test_the_teacher_decides_whether_a_removed_name_may_join_again(store, open_via_app):
    at, code, key, _ = _teacher(store, open_via_app)
    bo = _remove_bo(store, at, code, key)  # "Their name may join again" left unticked
    assert store.teacher.removed(code, key) == {"Bo": False}
    joining = open_via_app(LESSON, {"class": code})
    joining.text_input(key="name").input("bo")
    _click(joining, "Join")
    assert "removed the name" in joining.error[0].value and "student" not in joining.query_params
    at.selectbox(key="class-rejoin").set_value("Bo").run()
    _click(at, "Let it join again")
    assert store.teacher.removed(code, key) == {"Bo": True}
    said = open_via_app(LESSON, {"class": code, "student": bo}).error[0].value
    assert "You may join again with your name" in said


def test_a_replaced_read_only_link_says_so(store, open_via_app):
    _, code, key, _ = _teacher(store, open_via_app)
    old = store.access.read_only_link(code, key)
    store.access.read_only_link(code, key)
    view = open_via_app(TEACHER, {"class": code, "once": old})
    said = view.error[0].value.replace("\\", "")  # the message's markup escaped
    assert "made a new read-only link" in said and not view.get("plotly_chart")
