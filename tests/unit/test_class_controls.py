"""The teacher's controls in the class store, on in-memory SQLite: pace, pause, names hidden,
a student removed, a class closed, a read-only key; each read by a second store on the same
database (another replica: nothing kept in memory). (PostgreSQL:
tests/integration/test_class_controls.py; databases of earlier releases:
tests/integration/test_class_migrations.py.)"""

from __future__ import annotations

import pytest

import viz_transformer as vt
from viz_transformer.classroom.database import make_engine
from viz_transformer.classroom.pseudonyms import pseudonym, pseudonyms
from viz_transformer.classroom.rows import Controls
from viz_transformer.course import read_lesson
from viz_transformer.testing.classroom import COUNTING_LESSON as LESSON


@pytest.fixture
def store(lesson_model) -> vt.ClassStore:
    return vt.ClassStore(make_engine("sqlite://"))  # a database in memory, new each time


@pytest.fixture
def room(store):
    code, key = store.teacher.create(read_lesson(LESSON, "counting"))
    return store, code, key, vt.ClassStore(store.engine)  # the last: another replica


def test_a_pace_stops_students_at_its_step_and_all_lifts_it(room):
    store, code, key, replica = room
    ana = store.students.join(code, "Ana")
    store.students.move(code, ana, 3)  # ahead before the pace is set
    store.students.submit(code, ana, 3, "my words")
    store.teacher.set_pace(code, key, 2)  # steps 1 and 2, counted as on screen
    assert (
        replica.teacher.controls(code).pace == 2
        and replica.students.board(code, ana).controls.pace == 2
    )
    store.students.move(code, ana, 1)
    with pytest.raises(ValueError, match=r"Wait for your teacher.*step 2"):
        store.students.move(code, ana, 2)
    with pytest.raises(ValueError, match="Wait for your teacher"):
        store.students.submit(code, ana, 4, "one")
    assert store.students.submit(code, ana, 1, "cosine").correct  # at the pace: answers as before
    assert [a.step for a in replica.students.answers_of(code, ana)] == [3, 1]  # nothing lost
    replica.teacher.set_pace(code, key, None)  # `class pace CODE all`
    store.students.move(code, ana, 4)
    assert store.teacher.controls(code).pace is None and store.students.place(code, ana) == 4
    for bad in (0, 6, True, -1):
        with pytest.raises(ValueError, match="from 1 to 5"):
            store.teacher.set_pace(code, key, bad)


def test_pause_and_resume_reach_every_replica(room):
    store, code, key, replica = room
    ana = store.students.join(code, "Ana")
    assert replica.students.board(code, ana).controls == Controls()
    store.teacher.pause(code, key)
    assert (
        replica.students.board(code, ana).controls.paused and replica.teacher.controls(code).paused
    )
    store.students.submit(code, ana, 1, "sine")  # an answer sent as the pause came is kept
    replica.teacher.resume(code, key)
    assert not store.teacher.controls(code).paused and len(store.teacher.answers(code, key)) == 1
    with pytest.raises(ValueError, match="no class"):
        store.teacher.controls("NOSUCH")


def test_hidden_names_are_stable_distinct_pseudonyms(room):
    store, code, key, replica = room
    tokens = [store.students.join(code, f"Student {i}") for i in range(40)]
    store.teacher.hide_names(code, key)
    assert replica.teacher.controls(code).hide_names
    first = store.teacher.roster(code, key)["pseudonym"].tolist()
    assert len(set(first)) == 40 and not set(first) & {f"Student {i}" for i in range(40)}
    store.teacher.remove(code, key, "Student 0")
    # the others keep theirs
    assert replica.teacher.roster(code, key)["pseudonym"].tolist() == first[1:]
    store.students.move(code, tokens[5], 2)
    assert replica.teacher.roster(code, key)["pseudonym"].tolist() == first[1:]
    store.teacher.hide_names(code, key, False)
    assert not store.teacher.controls(code).hide_names


def test_pseudonyms_are_unique_in_a_big_class_and_depend_on_the_class():
    ids = list(range(1, 301))
    names = pseudonyms("ABCDEF", ids)
    assert len(set(names)) == 300 and names == pseudonyms("ABCDEF", ids)
    assert names[:20] != pseudonyms("GHJKMN", ids)[:20]
    assert all(len(n.split()) == 2 for n in names)


def test_a_student_is_removed_by_name_or_id_with_their_answers(room):
    store, code, key, replica = room
    ana, bo, _ = (store.students.join(code, n) for n in ("Ana", "Bo", "bo"))
    store.students.move(code, bo, 1)
    store.students.submit(code, bo, 1, "sine")
    store.students.submit(code, ana, 1, "cosine")
    store.teacher.pause(code, key)
    assert replica.students.watch(code, ana) == Controls(paused=True)
    assert store.teacher.remove(code, key, "  ANA ") == "Ana"  # as typed on a command line
    assert replica.students.watch(code, ana) is None  # their open page notices and redraws
    assert replica.students.watch(code, bo).paused and replica.students.watch("NOSUCH", bo) is None
    with pytest.raises(ValueError, match=r"^Your teacher removed you from this class\. Ask"):
        replica.students.board(code, ana)  # their page says so (not "unknown student token")
    with pytest.raises(ValueError, match="removed the name 'ana' from this class"):
        store.students.join(code, "ana")  # the teacher decides whether the name may come back
    store.teacher.let_rejoin(code, key, "ANA")
    assert store.teacher.removed(code, key) == {"Ana": True}
    with pytest.raises(ValueError, match="You may join again with your name"):
        replica.students.board(code, ana)
    # back in
    assert replica.students.watch(code, store.students.join(code, "Ana")) == Controls(paused=True)
    store.teacher.remove(code, key, "Ana", may_rejoin=True)
    with pytest.raises(ValueError, match="2 students are named 'Bo'"):
        store.teacher.remove(code, key, "Bo")
    with pytest.raises(ValueError, match="no student 'Cy'"):
        store.teacher.remove(code, key, "Cy")
    bo_id = int(store.teacher.roster(code, key).set_index("student").loc["bo", "id"])
    assert store.teacher.remove(code, key, bo_id) == "bo"
    assert store.teacher.roster(code, key)["student"].tolist() == ["Bo"]
    assert store.teacher.answers(code, key)["student"].tolist() == ["Bo"]
    funnel = store.teacher.funnel(code, key).set_index("step")
    assert funnel.loc[2, ["reached", "answered", "correct"]].tolist() == [1, 1, 0]


def test_a_closed_class_takes_no_joins_or_answers_and_keeps_its_answers(room):
    store, code, key, replica = room
    ana = store.students.join(code, "Ana")
    store.students.submit(code, ana, 1, "sine")
    store.teacher.close(code, key)
    assert replica.teacher.controls(code).closed
    with pytest.raises(ValueError, match="closed"):
        replica.students.join(code, "Bo")
    with pytest.raises(ValueError, match="closed"):
        replica.students.submit(code, ana, 1, "cosine")
    store.students.move(code, ana, 2)  # reading the steps goes on
    assert store.teacher.answers(code, key)["answer"].tolist() == ["sine"]
    assert store.students.board(code, ana).answers[0].answer == "sine"


def test_a_read_only_key_sees_the_class_and_changes_nothing(room):
    store, code, key, replica = room
    store.students.join(code, "Ana")
    viewer = store.access.viewer_key(code, key)
    assert viewer != key and store.access.check_key(code, key) == "teacher"
    assert replica.access.check_key(code, viewer) == "viewer"
    assert replica.teacher.roster(code, viewer)["student"].tolist() == ["Ana"]
    assert (
        len(replica.teacher.funnel(code, viewer)) == 5
        and replica.teacher.answers(code, viewer).empty
    )
    changes = [
        lambda k: store.teacher.pause(code, k),
        lambda k: store.teacher.set_pace(code, k, 2),
        lambda k: store.teacher.hide_names(code, k),
        lambda k: store.teacher.close(code, k),
        lambda k: store.teacher.remove(code, k, "Ana"),
        lambda k: store.access.viewer_key(code, k),
    ]
    for change in changes:
        with pytest.raises(PermissionError, match="read-only"):
            change(viewer)
        with pytest.raises(PermissionError, match="wrong teacher key"):
            change(key + "x")
    assert store.teacher.controls(code) == Controls()
    assert len(store.teacher.roster(code, key)) == 1
    newer = store.access.viewer_key(code, key)  # a new read-only link: the old one stops
    with pytest.raises(PermissionError):
        store.access.check_key(code, viewer)
    assert store.access.check_key(code, newer) == "viewer"


def test_removing_any_student_changes_no_other_pseudonym():
    """Pseudonyms collide only for ids 1,024 apart, so no student of a class of 60 (ids in a
    row, or spread by other classes' joins) redraws, and a removal changes nobody else's name
    (a hash per student collided in about half of such classes, and the redrawn student took
    the removed one's name)."""
    for n, code in enumerate(f"C{i:05d}" for i in range(40)):
        ids = list(range(7 + n, 7 + n + 60 * (1 + n % 3), 1 + n % 3))
        names = pseudonyms(code, ids)
        assert names == [pseudonym(code, i) for i in ids]  # nobody redrew
        for gone in (0, 17, 59):
            assert pseudonyms(code, ids[:gone] + ids[gone + 1 :]) == (
                names[:gone] + names[gone + 1 :]
            )


def test_a_replaced_read_only_link_says_the_teacher_made_a_new_one(tmp_path):
    store = vt.classroom(f"sqlite:///{tmp_path / 'c.sqlite3'}")
    code, key = store.teacher.create(vt.load_lesson("paper_tour"))
    first = store.access.viewer_key(code, key)
    second = store.access.viewer_key(code, key)
    assert store.access.check_key(code, second) == "viewer"
    with pytest.raises(PermissionError, match=r"^the teacher made a new read-only link"):
        store.access.check_key(code, first)
    with pytest.raises(PermissionError, match="wrong teacher key"):
        store.access.check_key(code, first + "x")
