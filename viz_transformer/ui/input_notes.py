"""What a page says about the input before drawing it: the output (or that an encoder has none),
several sentences with a picker for one at a time, a translation that stops early, and text that
looks like the other language of a translator."""

from __future__ import annotations

import streamlit as st

import viz_transformer as vt
from viz_transformer.models.registry import nearest_model
from viz_transformer.text.language import guess_language, split_sentences, stops_early
from viz_transformer.text.spm import CONTINUES, unknown_characters
from viz_transformer.ui import caches, choice, widgets
from viz_transformer.ui.state import TEXT_KEY
from viz_transformer.ui.switch import switch_button

PART_KEY = "sentence_part"  # the picker of one sentence of a paragraph (shared in links)
PARAGRAPH_KEY = "_paragraph"  # the last paragraph a sentence may have been picked from
NAMES = {"en": "English", "pt": "Portuguese"}


def output_line(trace: vt.Trace, text: str) -> None:
    """The model's output for ``text``, or why there is none (an encoder produces no text)."""
    spec = caches.spec(trace.model_name)
    if spec.encoder_only:
        st.markdown(
            f"**No output:** {trace.model_name} is an encoder: it turns the sentence into vectors "
            "(one per token) and writes no text; its self-attention is below."
        )
        return
    st.markdown(f"**Output:** {widgets.literal(trace.output_text)}")
    if spec.encoder_decoder and stops_early(text, trace.output_text):
        # the picker exists only for a text that splits into sentences (issue 28)
        several = len(split_sentences(text)) > 1
        how = "with the sentence picker on this page" if several else "by pasting one at a time"
        st.warning(
            "The output looks cut short: it has fewer sentences than the input (or under 40 % of "
            "its length). These models were trained on single sentences and often stop after the "
            f"first ones; inspect one sentence at a time {how}."
        )


def _use(text: str) -> None:
    """Callback: ``text`` becomes the sidebar's sentence."""
    st.session_state[TEXT_KEY] = text


def paragraph_steps(text: str) -> None:
    """After a sentence of a paragraph was picked: where it stands, the sentences before and
    after it, and the whole paragraph back (issue 28: the picker vanished with the paragraph)."""
    paragraph = st.session_state.get(PARAGRAPH_KEY)
    parts = tuple(split_sentences(paragraph)) if isinstance(paragraph, str) else ()
    if text not in parts:
        return
    i = parts.index(text)
    st.caption(f"Sentence {i + 1} of the {len(parts)} of your paragraph.")
    before, after = parts[max(i - 1, 0)], parts[min(i + 1, len(parts) - 1)]
    with st.container(horizontal=True):
        st.button(
            "Previous sentence",
            key="part_prev",
            disabled=i == 0,
            on_click=_use,
            args=(before,),
            icon=":material/chevron_left:",
        )
        st.button(
            "Next sentence",
            key="part_next",
            disabled=i == len(parts) - 1,
            on_click=_use,
            args=(after,),
            icon=":material/chevron_right:",
        )
        st.button("Whole paragraph", key="part_all", on_click=_use, args=(paragraph,))


def sentence_picker(text: str) -> None:
    """For a paragraph: say so, and offer its sentences one at a time (into the sidebar); the
    paragraph is kept, so its sentences can be stepped through and it can come back."""
    sentences = tuple(split_sentences(text))
    if len(sentences) < 2:
        paragraph_steps(text)
        return
    st.session_state[PARAGRAPH_KEY] = text
    st.info(
        f"The input has {len(sentences)} sentences. The models were trained on single sentences: "
        "pick one to inspect it alone (the paragraph comes back with one click)."
    )
    choice.line_picker(
        f"One sentence ({len(sentences)} in the input)", sentences, PART_KEY, "Pick a sentence"
    )


def language_check(name: str, text: str) -> None:
    """When the text looks like another language than the model reads, suggest the model that
    reads it (the other direction of a translator)."""
    spec = caches.spec(name)
    guess = guess_language(text)
    if spec.source_lang is None or guess is None or guess == spec.source_lang:
        return
    other = nearest_model(name, lambda s: s.source_lang == guess and s.shows == spec.shows)
    other = other or nearest_model(name, lambda s: s.source_lang == guess)
    message = (
        f"This text looks {NAMES.get(guess, guess)}, but {name} reads "
        f"{NAMES.get(spec.source_lang, spec.source_lang)}: its output will be nonsense."
    )
    if other is None:
        st.warning(message)
        return
    st.warning(f"{message} **{other}** reads {NAMES.get(guess, guess)}.")
    switch_button(other, "language")


def token_notes(name: str, text: str) -> None:
    """The characters the model cannot read (each is one ``<unk:...>`` token), and what the
    marks on the token labels mean when the sentence has any."""
    try:
        tokens = caches.model(name).source_ids(text)[1]
    except (*widgets.LOAD_ERRORS, NotImplementedError):
        return  # the page says why it cannot trace this text
    unknown = unknown_characters(tokens)
    if unknown:
        chars = sum(len(u) for u in unknown)
        groups = f"{len(unknown)} unknown token{'s' * (len(unknown) != 1)}"
        st.warning(
            f"{chars} character{'s' * (chars != 1)} this model cannot read ({groups}: "
            f"{', '.join(widgets.literal(u) for u in unknown[:12])}). It sees each group as "
            "one `<unk>` token, labelled `<unk:…>` on the maps with the characters it stands for."
        )
    if unknown or any(continues(t, text) for t in tokens):
        st.caption(
            "Token labels: `##s` is a piece that continues the word before it (`read` + `##s` = "
            "reads); a piece that starts a word, and punctuation, are shown bare; `<unk:😀>` is "
            "a piece the model cannot read, shown with its characters."
        )


def continues(token: str, text: str) -> bool:
    """Whether a token label carries the ``##`` mark of a word's continuation (WordPiece, and our
    SentencePiece labels), not ``##`` the text itself holds (a BPE model shows it as written)."""
    return token.startswith(CONTINUES) and token[2:3].isalnum() and token not in text


def input_notes(name: str, text: str, run: bool = False) -> None:
    """Everything a page says about the input before tracing it; ``run``: the text is a
    retrieval run's prompt (a document by design: no sentence picker)."""
    language_check(name, text)
    if not run and not caches.spec(name).decoder_only:  # an LLM is trained on documents
        sentence_picker(text)
    token_notes(name, text)
