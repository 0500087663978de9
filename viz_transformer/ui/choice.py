"""Pickers several pages share: the attention kind of a trace, and a sentence from an uploaded
file of lines (the line picked becomes the sidebar's sentence)."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

import viz_transformer as vt
from viz_transformer.records.kinds import KIND_TITLES, AttentionKind
from viz_transformer.text import uploads
from viz_transformer.ui import callbacks, state, widgets


def kind_picker(trace: vt.Trace) -> AttentionKind:
    """A radio of the attention kinds ``trace`` has a map of (key ``kind``, shared in links)."""
    kinds = trace.kinds
    state.keep_choice("kind", kinds)
    return st.radio(
        "Attention kind", kinds, format_func=KIND_TITLES.get, horizontal=True, key="kind"
    )


UPLOAD_HELP = "A larger file is refused by the browser, which marks it with a red “!”."


def upload_limit() -> str:
    """This server's upload limit, as every uploader states it: ``at most 1 MB``."""
    return f"at most {st.get_option('server.maxUploadSize')} MB"


def upload_picker(key: str = "upload_line") -> None:
    """A .txt file of sentences, one per line; picking a line puts it in the sidebar."""
    file = st.file_uploader(
        f"Text file, one sentence per line ({upload_limit()})",
        type=["txt", "csv"],
        key="upload",
        help=UPLOAD_HELP,
    )
    if file is None:
        return
    try:
        upload = uploads.read_lines(file.getvalue(), file.name)
    except ValueError as exc:
        widgets.show_error(exc)
        return
    for note in upload.notes:
        st.caption(note)
    line_picker(f"Sentence ({len(upload.lines)} in the file)", upload.lines, key, "Pick a line")


def line_picker(label: str, lines: Sequence[str], key: str, placeholder: str) -> None:
    """A numbered choice among ``lines`` (their first 90 characters); the one picked replaces the
    sidebar's sentence. A remembered pick past the end (other lines now) starts empty again."""
    state.keep_choice(key, [None, *range(len(lines))], None)
    st.selectbox(
        label,
        range(len(lines)),
        index=None,
        format_func=lambda i: f"{i + 1}: {lines[i][:90]}",
        key=key,
        on_change=callbacks.use_line,
        args=(lines, key),
        placeholder=placeholder,
    )
