"""Task generators: correct targets, disjoint splits, the vocabulary covers every word."""

from __future__ import annotations

import datetime as dt
import random
import re

import pytest

from viz_transformer.text.vocab import WordVocab, split_words
from viz_transformer.training.tasks import catalog as tasks


@pytest.mark.parametrize("task", list(tasks.TASKS.values()), ids=list(tasks.TASKS))
def test_lexicon_covers_every_sampled_word_and_splits_are_disjoint(task):
    vocab = WordVocab.build(task.lexicon, task.detok)
    train = tasks.pairs(task, 500, 0, "train")
    held = tasks.pairs(task, 200, 1, "held_out")
    for src, tgt in train + held:
        assert vocab.unknown_words(src) == [] and vocab.unknown_words(tgt) == []
        assert vocab.decode(vocab.encode(tgt)) == tgt
    assert not {s for s, _ in train} & {s for s, _ in held}
    assert len({s for s, _ in train}) == 500


def test_reverse_targets_are_the_source_reversed():
    for src, tgt in tasks.pairs(tasks.TASKS["reverse"], 100, 0, "train"):
        assert tgt.split() == src.split()[::-1]


def test_dates_targets_are_valid_iso_dates_with_the_source_year():
    task = tasks.TASKS["dates"]
    rng = random.Random(0)
    for _ in range(500):
        src, tgt = task.sample(rng)
        day = dt.date.fromisoformat(tgt)
        assert str(day.year) in src
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", tgt)
    assert tasks.TASKS["dates"].sample(random.Random(5))[1].count("-") == 2


def test_kalo_puts_verb_last_and_agrees_in_number():
    forms = {n: (n, False) for n in tasks._NOUNS} | {
        tasks._plural(n): (n, True) for n in tasks._NOUNS
    }
    rng = random.Random(0)
    for _ in range(300):
        src, tgt = tasks.TASKS["sov"].sample(rng)
        words, kalo = src.split(), tgt.split()
        noun, plural = next(forms[w] for w in words if w in forms)  # the subject comes first
        assert kalo[0] == tasks._NOUNS[noun] + ("n" if plural else "")
        verb = kalo[-1]
        assert verb.endswith("uk") or verb.endswith("an") == plural
    rng = random.Random(0)
    samples = [tasks.TASKS["sov"].sample(rng) for _ in range(4)]  # checked by hand
    assert samples[0] == ("a big boy teaches a black sailor", "tomo grato un navi nero un instrua")
    assert samples[3] == (
        "some big small queens hear a young dog",
        "rasin pikin graton kel vanu juna un audan",
    )


def test_split_words_spells_digits_and_keeps_hyphenated_words():
    assert split_words("The twenty-first of Nov, 2026") == [
        "the", "twenty-first", "of", "nov", ",", "2", "0", "2", "6",
    ]  # fmt: skip
