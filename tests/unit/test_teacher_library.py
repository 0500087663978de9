"""Issue 17's library parts: what a model shows, the nearest model with a missing part, whether a
model can take a sentence, the language guess, paragraphs, and presenter-mode figure text."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

import viz_transformer as vt
from viz_transformer.figures.common import scaled_fonts, wrap_title
from viz_transformer.figures.heatmap import MAX_HEIGHT, heatmap
from viz_transformer.models.registry import nearest_model
from viz_transformer.text.language import guess_language, split_sentences, stops_early


@pytest.mark.needs("bergamot", "minilm")
def test_each_spec_says_architecture_kinds_positions_and_data():
    assert vt.model_info("paper-en-pt").summary() == (
        "encoder-decoder: encoder self, decoder masked self, cross attention; sinusoidal "
        "positions; English -> Portuguese"
    )
    assert vt.model_info("paper-reverse").data == "task: reverse"
    assert vt.model_info("minilm").summary().startswith("encoder-only: encoder self; learned")
    assert vt.model_info("bergamot-pt-en").data == "Portuguese -> English"


@pytest.mark.needs("bergamot", "minilm")
def test_the_nearest_model_with_a_missing_kind_reads_the_same_language():
    has_decoder = lambda s: "decoder" in s.shows  # noqa: E731
    assert nearest_model("bergamot-en-pt", has_decoder) == "paper-en-pt"
    assert nearest_model("minilm", has_decoder) == "paper-en-pt"  # English, then real language
    assert nearest_model("paper-en-pt", has_decoder) != "paper-en-pt"  # never itself
    assert nearest_model("bergamot-pt-en", lambda s: s.source_lang == "pt") is None


def test_a_model_accepts_a_sentence_it_reads_in_its_language():
    assert vt.load_model("paper-en-pt").accepts("I am a student.")
    assert not vt.load_model("paper-en-pt").accepts("Eu sou um estudante e gosto de ler.")
    sov = vt.load_model("paper-sov")
    assert sov.accepts(sov.spec.example)
    assert not sov.accepts("The agreement was signed in August 1992.")  # unknown words


@pytest.mark.parametrize(
    ("text", "lang"),
    [
        ("I am a student and I like to read.", "en"),
        ("Eu sou um estudante e gosto de ler.", "pt"),
        ("Onde fica a estação?", "pt"),
        ("happy king red ship", None),  # a task's words: no guess
        ("", None),
    ],
)
def test_the_language_guess(text, lang):
    assert guess_language(text) == lang


def test_sentences_split_after_an_end_mark_but_not_after_abbreviations():
    text = "Mr. Smith went home. He was tired! Was he?\nYes"
    assert split_sentences(text) == ["Mr. Smith went home.", "He was tired!", "Was he?", "Yes"]
    assert split_sentences("Version 3.5 is out.") == ["Version 3.5 is out."]


def test_an_output_with_fewer_sentences_or_far_shorter_stops_early():
    source = "The cat sleeps. The dog runs. The bird sings."
    assert stops_early(source, "O gato dorme.")
    assert not stops_early(source, "O gato dorme. O cão corre. O pássaro canta.")
    assert not stops_early(source, "")  # nothing to judge


def test_presenter_scaling_multiplies_every_explicit_size_and_fills_in_the_defaults():
    fig = make_subplots(1, 2, subplot_titles=("a", "b"))
    fig.add_trace(go.Heatmap(z=[[0, 1]], colorbar={"tickfont": {"size": 10}}), 1, 1)
    fig.update_layout(title="t", height=300, legend_font_size=11)
    fig.update_yaxes(tickfont_size=12)
    out = scaled_fonts(fig, 2.0)
    assert out.layout.title.font.size == 34 and out.layout.font.size == 24
    assert out.layout.legend.font.size == 22 and out.data[0].colorbar.tickfont.size == 20
    assert out.layout.yaxis.tickfont.size == 24 and out.layout.xaxis2.tickfont.size == 24
    assert [a.font.size for a in out.layout.annotations] == [32, 32]  # subplot titles: 16 px
    assert out.layout.height == 600 and out.layout.hoverlabel.font.size == 26
    assert fig.layout.title.font.size is None  # the (possibly cached) figure is unchanged


def test_a_long_title_wraps_at_spaces_and_keeps_its_subtitle():
    text, lines = wrap_title("one two three four<br><sup>note</sup>", 9)
    assert text == "one two<br>three<br>four<br><sup>note</sup>" and lines == 3


def test_a_long_map_keeps_a_readable_height_and_thins_its_labels():
    n = 200
    tokens = [f"t{i}" for i in range(n)]
    fig = heatmap(np.full((n, n), 1 / n), tokens, tokens, "map", "query")
    assert fig.layout.height == MAX_HEIGHT  # 28 px a row would be 5,760 px
    shown = fig.layout.yaxis.ticktext
    assert 20 < len(shown) < n and shown[:2] == ("t0", f"t{fig.layout.yaxis.tickvals[1]}")
    short = heatmap(np.eye(5), tokens[:5], tokens[:5], "map", "query")
    assert short.layout.yaxis.ticktext == tuple(tokens[:5])


def test_pieces_that_continue_a_word_are_marked_and_unknown_ones_show_their_characters():
    from viz_transformer.models.hf.labels import pretty_tokens
    from viz_transformer.text.spm import display_piece, show_unknowns, unknown_characters

    assert [display_piece(p) for p in ["▁read", "s", "▁", ",", "</s>", "ção"]] == [
        "read", "##s", "▁", ",", "</s>", "##ção",
    ]  # fmt: skip
    surfaces = ["▁He", "▁", "😀", "▁", "日本", "s"]
    tokens = show_unknowns(["He", "▁", "<unk>", "▁", "<unk>", "##s", "</s>"],
                           [9, 13, 3, 13, 3, 7, 2], surfaces, unk_id=3)  # fmt: skip
    assert tokens == ("He", "▁", "<unk:😀>", "▁", "<unk:日本>", "##s", "</s>")
    assert unknown_characters([*tokens, "<unk>"]) == ["😀", "日本"]
    # byte-level BPE (GPT-2): "Ġ" starts a word; the text's first piece starts one too, and a
    # piece shows alike wherever it stands (the decoder steps label tokens one at a time)
    gpt2 = ["<|endoftext|>", "Hello", "Ġre", "ading", "!", "Ġ2", "024"]
    assert pretty_tokens(gpt2, True, frozenset({"<|endoftext|>"})) == (
        "<|endoftext|>", "Hello", "re", "##ading", "!", "2", "##024",
    )  # fmt: skip
    assert pretty_tokens(["ading"], True) == ("##ading",)
    # a bare space piece shows as "▁" on every page; byte-level newline and tab as what they are
    assert pretty_tokens(["Ġ", "Ċ", "ĠĊ", "ĊĊ", "Ġĉ"], True, byte_level=True) == (
        "▁", "↵", "↵", "↵↵", "⇥",
    )  # fmt: skip
    assert pretty_tokens(["▁", "▁Ċikku"], True) == ("▁", "Ċikku")  # SentencePiece: a real letter
    # a piece after a newline, a quote or a special token starts a word (issue 28: "##The")
    pieces = ["Ġcat", ".", "Ċ", "The", "Ġsaid", "ĠâĢĻ", "hi", "âĢĻ"]
    shown = ("cat", ".", "↵", "The", "said", "’", "hi", "’")
    assert pretty_tokens(pieces, True, byte_level=True) == shown
    assert pretty_tokens(["<s>", "t", "he"], True) == ("<s>", "t", "##he")
    # byte-level pieces show the characters their bytes encode; half a character as its bytes
    assert pretty_tokens(["ĠðŁĺ", "Ģ", "Ġcaf", "Ã©"], True, byte_level=True) == (
        "<0xF0><0x9F><0x98>", "<0x80>", "caf", "##é",
    )  # fmt: skip
    assert pretty_tokens(["[CLS]", "read", "##s"], False) == ("[CLS]", "read", "##s")  # WordPiece


def test_paper_en_pt_marks_continuations_and_unknown_characters():
    model = vt.load_model("paper-en-pt")
    ids, tokens = model.source_ids("He reads 😀 books.")
    assert len(ids) == len(tokens) and tokens[-1] == "</s>"
    assert "<unk:😀>" in tokens and any(t.startswith("##") for t in tokens)
    assert vt.trace(model, "He reads 😀 books.").src_tokens == tokens
