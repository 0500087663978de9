"""Issue 18's 20 everyday sentences and the content-word check that scores a student on them."""

from __future__ import annotations

from viz_transformer.training.en_pt.everyday import (
    CONTENT,
    EVERYDAY,
    FUNCTION_WORDS,
    content_words,
    dropped,
    kept,
    missing,
    score_everyday,
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


def test_every_sentence_lists_its_own_content_words_with_lower_case_renderings():
    assert len(CONTENT) == len(EVERYDAY)
    for source, listed in zip(EVERYDAY, CONTENT, strict=True):
        assert len(listed) >= 4, source
        for english, renderings in listed:
            assert english.lower() in source.lower(), (source, english)
            assert renderings and all(r == r.lower() and " " not in r for r in renderings)


def test_kept_matches_whole_words_only():
    assert kept("Minha avó vive em uma pequena casa.", ("casa",))
    assert not kept("O casamento foi ontem.", ("casa",))  # a longer word is not the word
    assert kept("Às 8 da manhã.", ("oito", "8")) and kept("Vai NEVAR.", ("nevar",))


def test_missing_names_the_english_words_the_student_drops():
    source = "The students are reading a book about history."
    teacher = "Os alunos estão lendo um livro sobre história."
    garbled = "Os alunos são muito tempo sobre história."  # the example
    assert missing(source, garbled, teacher) == ["reading", "book"]
    assert missing(source, "Os estudantes leem um livro sobre a história.", teacher) == []


def test_a_synonym_keeps_a_word_the_strict_measure_counts_as_dropped():
    source = "The flight to Paris was delayed by two hours."
    teacher = "O voo para Paris foi adiado por duas horas."
    student = "O voo para Paris foi atrasado por duas horas."
    assert missing(source, student, teacher) == [] and dropped(student, teacher) == ["adiado"]
    assert missing(source, "O voo para Paris foi adiado.", teacher) == ["two", "hours"]


def test_a_word_the_teacher_leaves_out_is_not_asked_of_the_student():
    source = "The hotel room has a beautiful view of the sea."
    teacher = "O quarto tem uma bela vista para o mar."  # no "hotel"
    assert missing(source, "O quarto tem uma vista para o mar.", teacher) == ["beautiful"]


def test_score_everyday_gives_one_row_per_sentence():
    teachers = [" ".join(pt[0] for _, pt in listed) for listed in CONTENT]
    rows = score_everyday(teachers, teachers)
    assert [r.source for r in rows] == list(EVERYDAY)
    assert all(r.missing == () and r.dropped == () for r in rows)
    rows = score_everyday(["Nada."] * len(EVERYDAY), teachers)
    assert all(len(r.missing) == len(listed) for r, listed in zip(rows, CONTENT, strict=True))
