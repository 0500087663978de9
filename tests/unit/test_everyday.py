"""Issue 18's 20 everyday sentences and the content-word check that scores a student on them."""

from __future__ import annotations

from viz_transformer.training.everyday import (
    EVERYDAY,
    FUNCTION_WORDS,
    content_words,
    dropped,
    english_content_words,
    lost_in_round_trip,
)


def test_content_words_skip_function_words_and_short_words():
    teacher = "A minha avó vive numa pequena casa perto do rio."
    assert content_words(teacher) == {"avó", "vive", "pequena", "casa", "perto", "rio"}
    assert not content_words("É para nós e para eles.")  # function words and words under 3 letters
    assert {"muito", "não", "para"} <= FUNCTION_WORDS


def test_dropped_lists_the_teachers_missing_words_in_the_teachers_order():
    teacher = "A minha avó vive numa pequena casa perto do rio."
    assert dropped("A minha avó vive numa casa.", teacher) == ["pequena", "perto", "rio"]
    assert dropped(teacher, teacher) == []
    assert dropped("Rio, casa; avó vive perto pequena!", teacher) == []  # order and case free
    assert dropped("A minha avó mora numa casa pequena perto do rio.", teacher) == ["vive"]


def test_twenty_distinct_everyday_sentences():
    assert len(EVERYDAY) == len(set(EVERYDAY)) == 20
    assert all(s[0].isupper() and s[-1] in ".?!" for s in EVERYDAY)


def test_english_content_words_skip_function_words():
    source = "We are taking the train to Lisbon next summer."
    assert english_content_words(source) == {"taking", "train", "lisbon", "next", "summer"}


def test_a_round_trip_loses_only_what_the_teachers_round_trip_keeps():
    source = "We are taking the train to Lisbon next summer."
    teacher_back = "We are taking the train to Lisbon next summer."
    student_back = "We are picking up the train to Lisbon next summer."  # "apanhando o trem"
    assert lost_in_round_trip(source, student_back, teacher_back) == ["taking"]
    assert lost_in_round_trip(source, teacher_back, teacher_back) == []
    # a word the teacher's own round trip changes ("delayed" -> "postponed") is not asked for
    flight = "The flight to Paris was delayed by two hours."
    back = "The flight to Paris was postponed for two hours."
    assert lost_in_round_trip(flight, "The flight to Paris was late.", back) == ["two", "hours"]
