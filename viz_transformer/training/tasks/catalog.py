"""Built-in tasks whose correct attention is known: reversal, date normalisation, a toy translation.

Each task samples (source, target) pairs from a seeded ``random.Random``. A pair belongs to the
held-out split when the CRC32 of its source is divisible by 10, so training never sees a held-out
source whatever the seed, and a fresh held-out sample can be drawn at any time.
"""

from __future__ import annotations

import calendar
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Split = Literal["train", "held_out"]


@dataclass(frozen=True)
class Task:
    """A sequence-to-sequence task: how to sample pairs and which words can ever occur."""

    name: str
    description: str
    example: str  # a source sentence shown pre-filled in the app
    detok: Literal["space", "concat"]
    sample: Callable[[random.Random], tuple[str, str]]
    lexicon: tuple[str, ...]  # every word either side can contain
    # activation patching's clean and corrupted inputs (equal token counts, different outputs),
    # written to meta.json as "examples": {"patching": [...]}; None: the app builds a pair
    patching: tuple[str, str] | None = None

    def meta_examples(self) -> dict[str, dict[str, list[str]]]:
        """What ``meta.json`` records of the task's example inputs beside ``"example"``."""
        return {"examples": {"patching": list(self.patching)}} if self.patching else {}


def is_held_out(source: str) -> bool:
    return zlib.crc32(source.encode()) % 10 == 0


def pairs(task: Task, n: int, seed: int, split: Split) -> list[tuple[str, str]]:
    """``n`` distinct pairs of ``split`` (raises if the task cannot supply that many)."""
    rng, out, seen = random.Random(seed), [], set()
    for _ in range(200 * n):
        src, tgt = task.sample(rng)
        if src in seen or is_held_out(src) != (split == "held_out"):
            continue
        seen.add(src)
        out.append((src, tgt))
        if len(out) == n:
            return out
    raise RuntimeError(f"task {task.name} gave only {len(out)} distinct {split} pairs of {n}.")


# --- reversal ---------------------------------------------------------------------------------
_WORDS = [
    "apple",
    "bird",
    "blue",
    "book",
    "bread",
    "car",
    "cat",
    "chair",
    "cloud",
    "cold",
    "dog",
    "door",
    "east",
    "fish",
    "flower",
    "green",
    "hand",
    "happy",
    "horse",
    "house",
    "king",
    "lamp",
    "light",
    "milk",
    "moon",
    "music",
    "night",
    "north",
    "ocean",
    "orange",
    "paper",
    "queen",
    "rain",
    "red",
    "river",
    "road",
    "salt",
    "sea",
    "ship",
    "shoe",
    "silver",
    "snow",
    "song",
    "star",
    "stone",
    "sun",
    "table",
    "tea",
    "tiger",
    "tree",
    "water",
    "west",
    "wind",
    "window",
    "winter",
    "wolf",
    "yellow",
]


def _sample_reverse(rng: random.Random) -> tuple[str, str]:
    # one word in five repeats its neighbour, so that matching words by content alone fails and
    # the model must learn to attend by position (the anti-diagonal)
    words = [rng.choice(_WORDS)]
    for _ in range(rng.randint(1, 11)):
        words.append(words[-1] if rng.random() < 0.2 else rng.choice(_WORDS))
    return " ".join(words), " ".join(reversed(words))


# --- dates ------------------------------------------------------------------------------------
_MONTHS = [calendar.month_name[m].lower() for m in range(1, 13)]
_MONS = [calendar.month_abbr[m].lower() for m in range(1, 13)]
_UNITS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"]
_TEENS = [
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
]
_ORDINALS = (
    _UNITS
    + _TEENS
    + ["twentieth"]
    + [f"twenty-{u}" for u in _UNITS]
    + ["thirtieth", "thirty-first"]
)


def _suffix(day: int) -> str:
    if day in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


_DATE_FORMATS: tuple[Callable[[int, int, int], str], ...] = (
    lambda y, m, d: f"{d} {_MONTHS[m - 1]} {y}",
    lambda y, m, d: f"{_MONTHS[m - 1]} {d}, {y}",
    lambda y, m, d: f"{_MONS[m - 1]} {d}, {y}",
    lambda y, m, d: f"{d} {_MONS[m - 1]} {y}",
    lambda y, m, d: f"{d:02d}/{m:02d}/{y}",
    lambda y, m, d: f"{d}.{m}.{y}",
    lambda y, m, d: f"the {_ORDINALS[d - 1]} of {_MONTHS[m - 1]} {y}",
    lambda y, m, d: f"{_MONTHS[m - 1]} the {_ORDINALS[d - 1]}, {y}",
    lambda y, m, d: f"{d}{_suffix(d)} {_MONTHS[m - 1]} {y}",
    lambda y, m, d: f"{_MONS[m - 1]} {d}{_suffix(d)}, {y}",
    lambda y, m, d: f"{y} {_MONTHS[m - 1]} {d}",
)


def _sample_date(rng: random.Random) -> tuple[str, str]:
    y, m = rng.randint(1900, 2099), rng.randint(1, 12)
    d = rng.randint(1, calendar.monthrange(y, m)[1])
    return rng.choice(_DATE_FORMATS)(y, m, d), f"{y:04d}-{m:02d}-{d:02d}"


# --- toy translation: English SVO -> "Kalo", SOV, adjectives after the noun, agreement ---------
_NOUNS = {
    "dog": "vanu", "cat": "miro", "bird": "tiki", "horse": "palo", "farmer": "gabri",
    "teacher": "lomar", "student": "eskol", "king": "rega", "queen": "rasi", "child": "pimo",
    "fox": "ruki", "girl": "nela", "boy": "tomo", "baker": "pano", "doctor": "medo",
    "sailor": "navi",
}  # fmt: skip
_ADJS = {
    "big": "grato", "small": "piki", "old": "vesu", "young": "juna", "happy": "feli",
    "angry": "kolo", "red": "roso", "black": "nero", "white": "bala", "tall": "alto",
    "clever": "saga", "lazy": "pigro",
}  # fmt: skip
_VERBS = {  # English singular -> Kalo stem; singular subject takes -a, plural -an, past -uk
    "sees": "vid", "likes": "am", "follows": "sekv", "helps": "help", "finds": "trov",
    "calls": "vok", "watches": "gard", "knows": "kon", "visits": "vizit", "teaches": "instru",
    "feeds": "nutr", "hears": "aud",
}  # fmt: skip
_PAST = {
    "sees": "saw", "likes": "liked", "follows": "followed", "helps": "helped", "finds": "found",
    "calls": "called", "watches": "watched", "knows": "knew", "visits": "visited",
    "teaches": "taught", "feeds": "fed", "hears": "heard",
}  # fmt: skip


def _plural(noun: str) -> str:
    return "children" if noun == "child" else noun + ("es" if noun.endswith(("x", "s")) else "s")


def _base_verb(verb: str) -> str:
    return verb[:-2] if verb.endswith(("ches", "shes")) else verb[:-1]


def _noun_phrase(rng: random.Random) -> tuple[str, str, bool]:
    noun, plural = rng.choice(list(_NOUNS)), rng.random() < 0.4
    adjs = rng.sample(list(_ADJS), rng.choice((0, 0, 1, 1, 2)))
    det = rng.choice(("the", "some")) if plural else rng.choice(("the", "a"))
    english = " ".join([det, *adjs, _plural(noun) if plural else noun])
    n = "n" if plural else ""
    kalo_det = {"the": "le", "a": "un", "some": "kel"}[det]
    # Kalo: noun, adjectives in mirrored order (each agreeing in number), determiner last
    kalo = " ".join([_NOUNS[noun] + n, *(_ADJS[a] + n for a in reversed(adjs)), kalo_det])
    return english, kalo, plural


def _sample_sov(rng: random.Random) -> tuple[str, str]:
    (s_en, s_ka, s_pl), (o_en, o_ka, _) = _noun_phrase(rng), _noun_phrase(rng)
    verb, past = rng.choice(list(_VERBS)), rng.random() < 0.3
    v_en = _PAST[verb] if past else (_base_verb(verb) if s_pl else verb)
    v_ka = _VERBS[verb] + ("uk" if past else "an" if s_pl else "a")
    return f"{s_en} {v_en} {o_en}", f"{s_ka} {o_ka} {v_ka}"


def _sov_lexicon() -> tuple[str, ...]:
    words = ["the", "a", "some", "le", "un", "kel", *_ADJS, *_PAST.values()]
    words += [w for n, k in _NOUNS.items() for w in (n, _plural(n), k, k + "n")]
    words += [a + s for a in _ADJS.values() for s in ("", "n")]
    words += [w for v, k in _VERBS.items() for w in (v, _base_verb(v), k + "a", k + "an", k + "uk")]
    return tuple(words)


TASKS: dict[str, Task] = {
    "reverse": Task(
        "reverse",
        "Reverse a sequence of words. The correct cross-attention is the anti-diagonal.",
        "happy king red ship blue sea",
        "space",
        _sample_reverse,
        tuple(_WORDS),
        ("happy king red ship", "happy king blue ship"),
    ),
    "dates": Task(
        "dates",
        "Rewrite a date in any of 11 surface forms as ISO 8601 (YYYY-MM-DD). Cross-attention "
        "must find the year, month and day wherever they stand.",
        "the twenty-first of November 2026",
        "concat",
        _sample_date,
        tuple(_MONTHS + _MONS + _ORDINALS + ["the", "of", "st", "nd", "rd", "th"])
        + tuple("0123456789/.,-"),
        ("the twenty-first of November 2026", "the twenty-first of October 2026"),
    ),
    "sov": Task(
        "sov",
        "Translate English subject-verb-object sentences into Kalo, an invented language that "
        "puts the verb last, adjectives after the noun (mirrored) and makes them agree in number.",
        "the old farmers feed a small black cat",
        "space",
        _sample_sov,
        _sov_lexicon(),
        ("the old farmers feed a small black cat", "the old farmers feed a small white cat"),
    ),
}
