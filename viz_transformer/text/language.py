"""A cheap guess of the language of a text (English or Portuguese), and its split into sentences.

Enough to notice Portuguese typed into an English->Portuguese translator, or a paragraph given to
models trained on single sentences; not a language identifier.
"""

from __future__ import annotations

import re

# frequent short words of each language that are rare in the other ("a", "no", "do" are shared)
_EN = (
    "the and is are was were of to in that it this with for you he she they we have has not be on "
    "at by from what where who how i am my your will would can there their"
)
_PT = (
    "o os as e é são foi era um uma uns umas de da das dos em na nas nos que não com para por eu "
    "ele ela eles nós você tem está estou sou meu minha seu sua isso este esta mas muito onde como "
    "quem"
)
_STOPWORDS = {"en": frozenset(_EN.split()), "pt": frozenset(_PT.split())}
_PT_LETTERS = re.compile(r"[ãõçáéíóúâêôà]")
_WORD = re.compile(r"[^\W\d_]+")
# a sentence ends at . ! ? (or …) followed by white space and an upper-case letter or a quote
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-ZÀ-ÖØ-Þ0-9])")
_ABBREVIATIONS = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Sra|St|e\.g|i\.e|etc|vs)\.$", re.I)


def guess_language(text: str) -> str | None:
    """``"en"`` or ``"pt"`` when the text's short words clearly say which, else None.

    Counts words of each stop-word list (plus Portuguese-only letters such as ã, ç); a text of
    fewer than two such hints, or an even count, gives None.
    """
    words = [w.lower() for w in _WORD.findall(text)]
    score = {lang: sum(w in stop for w in words) for lang, stop in _STOPWORDS.items()}
    score["pt"] += len(_PT_LETTERS.findall(text.lower()))
    best, other = ("en", "pt") if score["en"] > score["pt"] else ("pt", "en")
    if score[best] < 2 or score[best] < 2 * score[other]:
        return None
    return best


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``: split after . ! ? before a capital, never after a short
    abbreviation (Mr., e.g.); lines stay apart. Empty pieces are dropped."""
    sentences: list[str] = []
    for line in text.splitlines():
        start = 0
        for match in _SENTENCE_END.finditer(line):
            if _ABBREVIATIONS.search(line[start : match.start()]):
                continue
            sentences.append(line[start : match.start()].strip())
            start = match.end()
        sentences.append(line[start:].strip())
    return [s for s in sentences if s]


def stops_early(source: str, output: str) -> bool:
    """Whether a translation looks cut short: fewer sentences than the source had (models
    trained on single sentences end after the first ones), or under 40 % of its length."""
    if not output.strip():
        return False
    fewer = len(split_sentences(output)) < len(split_sentences(source))
    return fewer or len(output) < 0.4 * len(source)
