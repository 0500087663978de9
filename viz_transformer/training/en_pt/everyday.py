"""Twenty everyday sentences a class types, the content words each must carry into Portuguese,
and which of them a student's translation drops (issue 18's test of ``paper-en-pt``;
``bench_paper_en_pt`` reports them).

Issue 18's target: no content word dropped where the teacher keeps it. ``CONTENT`` lists every
sentence's English content words, each with the Portuguese words that render it (dictionary
translations, European and Brazilian, in the inflections a sentence like this one takes): a word
is *kept* by a translation holding one of them. ``missing`` names the listed words the teacher
keeps and the student does not, so a synonym ("atrasado" for "adiado") keeps a word and an
absent one ("Os alunos são muito tempo sobre história" lacks "reading" and "book") drops it.

``dropped`` is a stricter measure the benchmark reports beside it: a Portuguese content word of
the teacher's (three or more letters, not a function word) that the student lacks, so a synonym
or another inflection ("neve" for "nevar") counts too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
# per sentence of EVERYDAY: (English content word, the Portuguese words that render it)
CONTENT: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...] = (
    (("students", ("alunos", "alunas", "estudantes")),
     ("reading", ("lendo", "ler", "leem", "lêem")), ("book", ("livro",)),
     ("history", ("história",))),
    (("teacher", ("professor", "professora")), ("gives", ("dá", "passa", "entrega")),
     ("homework", ("lição", "lições", "trabalho", "trabalhos", "tpc", "dever", "deveres",
                   "tarefa", "tarefas")),
     ("Friday", ("sexta", "sextas"))),
    (("sister", ("irmã",)), ("studies", ("estuda",)), ("mathematics", ("matemática",)),
     ("university", ("universidade",))),
    (("school", ("escola", "escolar")), ("library", ("biblioteca",)), ("opens", ("abre",)),
     ("eight", ("oito", "8")), ("morning", ("manhã",))),
    (("cold", ("frio", "fria")), ("today", ("hoje",)),
     ("snow", ("nevar", "neve", "nevará", "nevando")), ("tonight", ("noite",))),
    (("sun", ("sol",)), ("shining", ("brilhando", "brilhar", "brilha")),
     ("can", ("podemos", "possamos", "poder", "pode")), ("go", ("ir", "vamos")),
     ("beach", ("praia",))),
    (("tomorrow", ("amanhã",)), ("rain", ("chover", "choverá", "chove", "chuva")),
     ("north", ("norte",)), ("country", ("país",))),
    (("wind", ("vento",)), ("strong", ("forte",)), ("during", ("durante",)),
     ("storm", ("tempestade", "tormenta")), ("last night", ("noite", "ontem"))),
    (("grandmother", ("avó",)), ("lives", ("vive", "mora")),
     ("small", ("pequena", "pequeno", "casinha")), ("house", ("casa", "casinha")),
     ("near", ("perto", "junto", "próximo", "próxima")), ("river", ("rio",))),
    (("brother", ("irmão",)), ("play", ("jogamos", "jogar", "brincamos")),
     ("football", ("futebol",)), ("father", ("pai",))),
    (("family", ("família",)), ("eats", ("come", "comem", "janta", "jantam")),
     ("dinner", ("jantar", "janta")), ("together", ("juntos", "juntas", "junta", "junto")),
     ("Sundays", ("domingos", "domingo"))),
    (("parents", ("pais",)), ("bought", ("compraram", "comprou")), ("new", ("novo",)),
     ("car", ("carro",)), ("week", ("semana",))),
    (("taking", ("tomar", "tomando", "tomamos", "apanhar", "apanhando", "apanhamos", "pegar",
                 "pegando", "pegamos")),
     ("train", ("comboio", "trem")), ("Lisbon", ("lisboa",)), ("next", ("próximo",)),
     ("summer", ("verão",))),
    (("flight", ("voo", "vôo")), ("Paris", ("paris",)),
     ("delayed", ("adiado", "atrasado", "adiada", "atrasada", "atrasou", "atraso")),
     ("two", ("duas", "dois", "2")), ("hours", ("horas",))),
    (("where", ("onde",)), ("can", ("posso", "poderei", "consigo")), ("buy", ("comprar",)),
     ("ticket", ("bilhete", "passagem", "ingresso")), ("bus", ("ônibus", "autocarro"))),
    (("hotel", ("hotel",)), ("room", ("quarto",)), ("has", ("tem",)),
     ("beautiful", ("bela", "belo", "bonita", "linda", "maravilhosa")), ("view", ("vista",)),
     ("sea", ("mar",))),
    (("would like", ("gostaria", "queria")), ("cup", ("xícara", "chávena", "copo")),
     ("coffee", ("café",)), ("milk", ("leite",)), ("please", ("favor",))),
    (("cooks", ("cozinha", "prepara", "faz")), ("rice", ("arroz",)),
     ("beans", ("feijão", "feijões")), ("lunch", ("almoço",)), ("day", ("dias", "dia"))),
    (("bread", ("pão",)), ("bakery", ("padaria",)), ("fresh", ("fresco",)),
     ("warm", ("quente", "morno", "quentinho"))),
    (("ate", ("comemos",)), ("fish", ("peixe",)),
     ("vegetables", ("legumes", "vegetais", "verduras", "hortaliças")),
     ("restaurant", ("restaurante",))),
)  # fmt: skip
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


def content_words(text: str) -> set[str]:
    """Lower-cased Portuguese words of three or more letters that are not function words."""
    words = re.findall(r"[a-zà-ÿ]+", text.lower())
    return {w for w in words if len(w) >= 3 and w not in FUNCTION_WORDS}


def dropped(student: str, teacher: str) -> list[str]:
    """The teacher's content words that the student's translation lacks, in the teacher's order."""
    missing = content_words(teacher) - content_words(student)
    order = re.findall(r"[a-zà-ÿ]+", teacher.lower())
    return sorted(missing, key=order.index)


def kept(text: str, renderings: tuple[str, ...]) -> bool:
    """Whether the translation ``text`` holds one of ``renderings`` as a whole word."""
    return not set(renderings).isdisjoint(re.findall(r"\w+", text.lower()))


def missing(source: str, student: str, teacher: str) -> list[str]:
    """The listed content words of ``source`` (one of ``EVERYDAY``) that the teacher's
    translation keeps and the student's drops, in ``CONTENT``'s order."""
    listed = CONTENT[EVERYDAY.index(source)]
    return [en for en, pt in listed if kept(teacher, pt) and not kept(student, pt)]


@dataclass(frozen=True)
class EverydayRow:
    """One everyday sentence, both translations and what the student's lacks."""

    source: str
    student: str
    teacher: str
    missing: tuple[str, ...]  # listed English content words (the target)
    dropped: tuple[str, ...]  # the teacher's Portuguese content words (strict)


def score_everyday(students: list[str], teachers: list[str]) -> list[EverydayRow]:
    """Rows for ``EVERYDAY`` given the student's and the teacher's translations, in order."""
    rows = zip(EVERYDAY, students, teachers, strict=True)
    return [
        EverydayRow(
            en, ours, theirs, tuple(missing(en, ours, theirs)), tuple(dropped(ours, theirs))
        )
        for en, ours, theirs in rows
    ]
