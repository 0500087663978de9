"""Twenty everyday sentences a class types, and which of the teacher's content words a student's
translation of them drops (issue 18's test of ``paper-en-pt``; ``bench_paper_en_pt`` reports them).

A content word is a lower-cased Portuguese word of three or more letters that is not a function
word; the check is strict: a synonym ("atrasado" for "adiado") or another inflection ("neve" for
"nevar") counts as a drop. ``lost_in_round_trip`` asks the same question of meaning: both
translations go back to English (Bergamot PT->EN), and an English content word of the source that
the teacher's round trip keeps must be in the student's too, whatever Portuguese word carried it.
"""

from __future__ import annotations

import re

EVERYDAY = (  # written for the test and the benchmark
    "The students are reading a book about history.",
    "Our teacher gives us homework every Friday.",
    "My sister studies mathematics at the university.",
    "The school library opens at eight in the morning.",
    "It is very cold today and it will snow tonight.",
    "The sun is shining, so we can go to the beach.",
    "Tomorrow it will rain in the north of the country.",
    "The wind was strong during the storm last night.",
    "My grandmother lives in a small house near the river.",
    "My brother and I play football with our father.",
    "Our family eats dinner together on Sundays.",
    "My parents bought a new car last week.",
    "We are taking the train to Lisbon next summer.",
    "The flight to Paris was delayed by two hours.",
    "Where can I buy a ticket for the bus?",
    "The hotel room has a beautiful view of the sea.",
    "I would like a cup of coffee with milk, please.",
    "She cooks rice and beans for lunch every day.",
    "The bread in this bakery is fresh and warm.",
    "We ate fish and vegetables at the restaurant.",
)
_FUNCTION = (
    "a o as os um uma uns umas de do da dos das em no na nos nas num numa por pelo pela pelos "
    "pelas para com sem sob sobre entre até e ou mas que se como quando onde porque muito muita "
    "muitos muitas mais menos já não sim eu tu ele ela nós vós eles elas me te lhe nos vos lhes "
    "meu minha meus minhas teu tua seu sua seus suas nosso nossa nossos nossas este esta estes "
    "estas esse essa esses essas isto isso aquele aquela aquilo é são está estão foi era ser "
    "estar ter tem têm há ao aos à às lo la los las neste nesta nestes nestas nesse nessa deste "
    "desta destes destas desse dessa disso disto naquele naquela daquele daquela"
)
FUNCTION_WORDS = frozenset(_FUNCTION.split())
_ENGLISH_FUNCTION = (
    "the and for are but not you all any can had her was one our out his has how its may who "
    "did get him she too use with that this they them then than there their from have will "
    "would could should been were what when where which while into onto about some very also "
    "just more most much many such only your yours ours here each every other again over under "
    "does doing being"
)
ENGLISH_FUNCTION_WORDS = frozenset(_ENGLISH_FUNCTION.split())


def content_words(text: str) -> set[str]:
    """Lower-cased Portuguese words of three or more letters that are not function words."""
    words = re.findall(r"[a-zà-ÿ]+", text.lower())
    return {w for w in words if len(w) >= 3 and w not in FUNCTION_WORDS}


def dropped(student: str, teacher: str) -> list[str]:
    """The teacher's content words that the student's translation lacks, in the teacher's order."""
    missing = content_words(teacher) - content_words(student)
    order = re.findall(r"[a-zà-ÿ]+", teacher.lower())
    return sorted(missing, key=order.index)


def english_content_words(text: str) -> set[str]:
    """Lower-cased English words of three or more letters that are not function words."""
    words = re.findall(r"[a-z]+", text.lower())
    return {w for w in words if len(w) >= 3 and w not in ENGLISH_FUNCTION_WORDS}


def lost_in_round_trip(source: str, student_back: str, teacher_back: str) -> list[str]:
    """The English content words of ``source`` that the teacher's translation, read back into
    English (``teacher_back``), keeps and the student's (``student_back``) lacks, in source
    order: what the student's translation lost in meaning, not merely in wording."""
    kept = english_content_words(source) & english_content_words(teacher_back)
    missing = kept - english_content_words(student_back)
    order = re.findall(r"[a-z]+", source.lower())
    return sorted(missing, key=order.index)
