"""Issue 33's Lesson and Teacher pages in AppTest: a student alone and in a class (join, answer
right and wrong, resume with the token), the teacher with and without the key, bad codes, names
and tokens as messages, a name with markup shown as typed."""

from __future__ import annotations

from urllib.parse import parse_qs

from streamlit.testing.v1 import AppTest

import viz_transformer as vt
from viz_transformer.ui import class_store

LESSON, TEACHER = "pages/lesson.py", "pages/teacher.py"
TOUR = "paper_tour"
XSS = "<img src=x onerror=alert(1)>"


def _texts(at: AppTest) -> str:
    """Every text element's value (Markdown, messages, captions, titles) of the page."""
    kinds = (
        "markdown",
        "caption",
        "success",
        "error",
        "warning",
        "info",
        "title",
        "header",
        "subheader",
    )
    return "\n".join(str(e.value) for kind in kinds for e in at.get(kind))


def _head_step(lesson: vt.Lesson) -> int:
    return next(i for i, s in enumerate(lesson.steps) if s.question and s.question.kind == "head")


def _grace_at_head_step(store: vt.ClassStore) -> tuple[vt.Lesson, int, str, str]:
    """A class of the tour with Grace at its first head question: the lesson, that step, the
    class code and Grace's token."""
    lesson = vt.load_lesson(TOUR)
    step = _head_step(lesson)
    code, _ = store.teacher.create(TOUR)
    token = store.students.join(code, "Grace")
    store.students.move(code, token, step)
    return lesson, step, code, token


def _row(at: AppTest, step: int, layer: int):  # -> ButtonGroup
    """The grid's row of heads of ``layer`` on ``step``."""
    return next(g for g in at.get("button_group") if g.key == f"lesson-head-{step}-{layer}")


def _go_to(at: AppTest, step: int) -> None:
    """Click Next until ``step`` is open."""
    while at.header[0].value != vt.load_lesson(TOUR).steps[step].title:
        next(b for b in at.button if b.label == "Next").click().run()
        assert not at.exception, at.exception


def test_alone_a_choice_is_graded_right_and_wrong_and_next_moves_on(open_via_app):
    lesson = vt.load_lesson(TOUR)
    at = open_via_app(LESSON, {"lesson": TOUR})
    assert at.title[0].value == lesson.title and at.header[0].value == lesson.steps[0].title
    check = lesson.steps[0].question
    wrong = next(o for i, o in enumerate(check.options) if i != check.args["correct"])
    at.radio(key="lesson-choice-0").set_value(wrong)
    next(b for b in at.button if b.label == "Check").click().run()
    assert at.error and not at.success and "Not this one" in at.error[0].value
    at.radio(key="lesson-choice-0").set_value(check.options[check.args["correct"]])
    next(b for b in at.button if b.label == "Check").click().run()
    assert at.success and not at.error
    assert at.header[0].value == lesson.steps[0].title  # answering does not move on
    next(b for b in at.button if b.label == "Next").click().run()
    assert at.header[0].value == lesson.steps[1].title


def test_a_step_links_to_its_page_in_its_view_and_back(open_via_app):
    lesson = vt.load_lesson(TOUR)
    step = _head_step(lesson)
    at = open_via_app(LESSON, {"lesson": TOUR})
    _go_to(at, step)
    [link] = at.get("page_link")
    query = {k: v[0] for k, v in parse_qs(link.proto.query_string).items()}
    view = {k: str(v) for k, v in lesson.steps[step].view.items()}
    assert query == {**view, "model": lesson.model, "lesson_back": f"lesson={TOUR}"}
    # the link followed in the same session: the page takes the view from it, and its sidebar
    # offers the way back
    at.query_params.clear()
    at.query_params.update(query)
    at.switch_page(f"pages/{lesson.steps[step].page}.py").run()
    assert not at.exception
    for key, value in lesson.steps[step].view.items():
        assert at.session_state[key] == value
    [back] = at.sidebar.get("page_link")
    assert back.proto.label == "Back to the lesson"
    assert parse_qs(back.proto.query_string) == {"lesson": [TOUR]}


def test_a_head_is_answered_by_clicking_it_in_the_grid(store, open_via_app):
    lesson = vt.load_lesson(TOUR)
    step = _head_step(lesson)
    check = lesson.steps[step].question
    code, key = store.teacher.create(TOUR)
    at = open_via_app(LESSON, {"class": code})
    at.text_input(key="name").input("Ada")
    next(b for b in at.button if b.label == "Join").click().run()
    token = at.query_params["student"]
    token = token[0] if isinstance(token, list) else token
    assert store.students.student(code, token).name == "Ada"
    _go_to(at, step)
    assert store.students.place(code, token) == step
    right = vt.grade(check, "L0 H0").expected  # what the model says now
    layers = list(check.args.get("layers") or range(2))
    wrong = next(f"L{la} H{h}" for la in layers for h in range(8) if f"L{la} H{h}" != right)
    for answer, ok in ((wrong, False), (right, True)):
        layer, head = (int(x[1:]) for x in answer.split())
        _row(at, step, layer).set_value(head).run()
        assert bool(at.success) is ok and bool(at.error) is not ok
        assert answer in _texts(at)
    marked = {g.key: g.value for g in at.get("button_group") if g.key.startswith("lesson-head")}
    layer, head = (int(x[1:]) for x in right.split())
    assert marked == {f"lesson-head-{step}-{la}": head if la == layer else None for la in layers}
    stored = store.teacher.answers(code, key)
    assert list(stored["answer"]) == [wrong, right] and list(stored["correct"]) == [False, True]
    assert store.students.place(code, token) == step  # answering did not move the student


def test_a_reload_with_the_token_resumes_at_the_step_with_the_answer(store, open_via_app):
    lesson, step, code, token = _grace_at_head_step(store)
    right = vt.grade(lesson.steps[step].question, "L0 H0").expected
    store.students.submit(code, token, step, right)
    at = open_via_app(LESSON, {"class": code, "student": token})  # a new session: another replica
    assert at.header[0].value == lesson.steps[step].title
    assert at.text_input(key=f"lesson-typed-{step}").value == right
    layer, head = (int(x[1:]) for x in right.split())
    assert _row(at, step, layer).value == head  # the head answered is marked in the grid
    assert at.success and right in at.success[0].value
    assert "Grace" in _texts(at)


def test_an_unreadable_answer_is_still_unreadable_after_a_reload(store, open_via_app):
    lesson, step, code, token = _grace_at_head_step(store)
    assert store.students.submit(code, token, step, "L one").readable is False
    at = open_via_app(LESSON, {"class": code, "student": token})  # a new session: another replica
    assert at.header[0].value == lesson.steps[step].title
    assert not at.error and not at.success  # yellow, as when it was given: not "wrong"
    assert len(at.warning) == 1 and "L one" in at.warning[0].value


def test_bad_code_name_and_token_are_messages(store, open_via_app):
    at = open_via_app(LESSON, {"class": "NOPE42"})
    assert "no class with code" in at.error[0].value
    code, _ = store.teacher.create(TOUR)
    at = open_via_app(LESSON, {"class": code})
    at.text_input(key="name").input("   ")
    next(b for b in at.button if b.label == "Join").click().run()
    assert not at.exception and "Type a name" in at.error[0].value
    assert "student" not in at.query_params
    at = open_via_app(LESSON, {"class": code, "student": "forged"})
    assert "unknown student token" in at.error[0].value
    assert any(b.label == "Join again with a name" for b in at.button)


def test_the_teacher_sees_the_class_only_with_its_key(store, figures, decode_array, open_via_app):
    lesson = vt.load_lesson(TOUR)
    code, key = store.teacher.create(TOUR)
    for name in ("Ada", XSS):
        token = store.students.join(code, name)
        store.students.move(code, token, 0)
    # a wrong answer, by the XSS name
    store.students.submit(code, token, 0, "Encoder self-attention")
    for params in ({"class": code}, {"class": code, "once": "wrong"}, {"class": code, "key": key}):
        at = open_via_app(TEACHER, params)  # a key in a link is refused, the right one too
        assert at.error and not at.dataframe and not at.get("plotly_chart")
        assert "Ada" not in _texts(at) and lesson.title not in _texts(at)
    at = open_via_app(TEACHER, {"class": code, "once": store.access.one_time_link(code, key)})
    assert not at.error
    where, wrong = (df.value for df in at.dataframe)
    assert list(where["student"]) == ["Ada", XSS]  # a table cell shows the text, never renders it
    assert list(wrong["wrong answer"]) == ["Encoder self-attention"]
    assert XSS not in _texts(at)
    [funnel] = figures(at)
    reached, answered, correct = (decode_array(bar["y"]) for bar in funnel["data"])
    assert reached[0] == 2 and answered[0] == 1 and correct[0] == 0


def test_presenter_mode_draws_the_funnel_text_large_on_one_screen(store, figures, open_via_app):
    code, key = store.teacher.create(TOUR)
    once = store.access.one_time_link(code, key)
    small = figures(open_via_app(TEACHER, {"class": code, "once": once}))[0]
    once = store.access.one_time_link(code, key)
    at = open_via_app(TEACHER, {"class": code, "once": once, "presenter": "True"})
    large = figures(at)[0]
    for bar_small, bar_large in zip(small["data"], large["data"], strict=True):
        assert bar_large["textfont"]["size"] >= 1.5 * bar_small["textfont"]["size"] >= 18
    assert large["layout"]["height"] <= 450  # with the code and QR code, on a 768 px screen
    assert not at.get("code")  # no key, no one-time link projected
    assert "One-time link for another browser" not in {b.label for b in at.button}


def test_a_class_is_opened_from_the_teacher_page(store: vt.ClassStore, open_via_app):
    at = open_via_app(TEACHER, {})
    at.selectbox(key="class-lesson").set_value(TOUR)
    next(b for b in at.button if b.label == "Open a class").click().run()
    code = at.query_params["class"]
    code = code[0] if isinstance(code, list) else code
    assert "key" not in at.query_params  # never in the URL: a session is kept instead
    session = at.session_state["_teacher_keys"][code]
    [key] = [c.value for c in at.get("code")]  # the teacher's key, shown in this tab
    assert store.access.check_key(code, session) == store.access.check_key(code, key) == "teacher"
    assert session != key and at.get("plotly_chart") and not at.error


def test_a_database_that_cannot_be_reached_is_a_message(monkeypatch, open_via_app):
    monkeypatch.setenv("VT_DATABASE_URL", "postgresql://postgres@127.0.0.1:9/none")  # refused
    class_store.store.clear()
    student = {"class": "K7QX2M", "student": "t"}
    for page, params in (
        (LESSON, {"class": "K7QX2M"}),
        (LESSON, student),
        (TEACHER, {"class": "K7QX2M", "once": "k"}),
    ):
        at = open_via_app(page, params)
        assert "class database cannot be reached" in at.error[0].value, (page, params)
    class_store.store.clear()


def test_an_empty_check_keeps_the_clicked_answer_and_asks_for_one(store, open_via_app):
    lesson = vt.load_lesson(TOUR)
    step = _head_step(lesson)
    code, key = store.teacher.create(TOUR)
    at = open_via_app(LESSON, {"class": code})
    at.text_input(key="name").input("Empty Checker")
    next(b for b in at.button if b.label == "Join").click().run()
    _go_to(at, step)
    right = vt.grade(lesson.steps[step].question, "L0 H0").expected
    layer, head = (int(x[1:]) for x in right.split())
    _row(at, step, layer).set_value(head).run()
    assert at.success and right in _texts(at)
    for blank in ("", "   "):
        at.text_input(key=f"lesson-typed-{step}").input(blank)
        next(b for b in at.button if b.label == "Check").click().run()
        assert not at.exception, at.exception
        assert any("Type an answer first" in w.value for w in at.warning)
        assert at.success and f"Your answer: **{right}**" in _texts(at)  # the last answer stays
    stored = store.teacher.answers(code, key)
    assert list(stored["answer"]) == [right] and list(stored["correct"]) == [True]
