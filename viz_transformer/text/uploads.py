"""Reading an uploaded text file into sentences, one per line: size caps, encodings, refusals.

Bytes in, lines and notes out; the page shows the notes and offers the lines. No Streamlit here.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from viz_transformer.settings import MAX_CHARS, MAX_UPLOAD_BYTES, MAX_UPLOAD_LINES

MAX_BYTES = MAX_UPLOAD_BYTES  # a few thousand sentences: plenty, cheap to decode every run
MAX_LINES = MAX_UPLOAD_LINES  # a select box longer than this is unusable
BINARY_HINT = "Upload a plain-text file (.txt) with one sentence per line, saved as UTF-8."


@dataclass(frozen=True)
class Upload:
    """The sentences of a file and what was changed on the way.

    Attributes:
        lines: non-blank lines, stripped, in file order.
        encoding: the encoding used: ``utf-8``, ``utf-8-sig``, ``utf-16`` or ``latin-1``.
        notes: one sentence per thing the user should know (cuts, fallbacks, CSV).
    """

    lines: tuple[str, ...]
    encoding: str
    notes: tuple[str, ...] = ()


def _decode(data: bytes, truncated: bool) -> tuple[str, str]:
    """(text, encoding): UTF-8 with or without BOM, UTF-16 with BOM, else Latin-1.

    A cut file may end inside a character; the incremental decoders hold back that tail
    instead of failing, and the caller drops the last, partial line anyway.
    """
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        body = data[: len(data) - len(data) % 2]
        try:
            text = codecs.getincrementaldecoder("utf-16")().decode(body, final=not truncated)
        except UnicodeDecodeError as exc:
            raise ValueError(f"The file starts like UTF-16 but is not. {BINARY_HINT}") from exc
        return text, "utf-16"
    if b"\x00" in data:
        raise ValueError(f"This looks like a binary file (it holds NUL bytes). {BINARY_HINT}")
    encoding = "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    try:
        return codecs.getincrementaldecoder(encoding)().decode(data, final=not truncated), encoding
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def _looks_binary(text: str) -> bool:
    """More than 10% control characters (other than whitespace): not text in any encoding."""
    if not text:
        return False
    controls = sum(1 for c in text if not (c.isprintable() or c in "\t\n\r\f\v"))
    return controls > 0.1 * len(text)


def read_lines(
    data: bytes,
    filename: str = "",
    max_bytes: int = MAX_BYTES,
    max_lines: int = MAX_LINES,
    max_chars: int = MAX_CHARS,
) -> Upload:
    """The sentences of an uploaded file, one per non-blank line.

    Args:
        data: the file's bytes.
        filename: its name, only to recognise a CSV.
        max_bytes: only this many bytes are read (the last, possibly cut, line is dropped).
        max_lines: at most this many sentences are kept.
        max_chars: longer lines are skipped: the model refuses them anyway.

    Returns:
        The lines, the encoding used and notes on anything cut, skipped or guessed.

    Raises:
        ValueError: empty, binary, or without a line of text; the message says what to upload.
    """
    if not data:
        raise ValueError("The file is empty. Upload a text file with one sentence per line.")
    notes = []
    truncated = len(data) > max_bytes
    if truncated:
        notes.append(
            f"The file has {len(data) / 1000:,.0f} KB; only the first {max_bytes / 1000:,.0f} KB "
            "were read (the last, cut line dropped)."
        )
    text, encoding = _decode(data[:max_bytes], truncated)
    if _looks_binary(text):
        raise ValueError(f"This does not look like text (mostly control characters). {BINARY_HINT}")
    if encoding == "latin-1":
        notes.append("The file is not UTF-8; it was read as Latin-1, so check accented letters.")
    raw = text.splitlines()
    if truncated and raw:
        raw = raw[:-1]
    lines = [s for line in raw if (s := line.strip())]
    long = [s for s in lines if len(s) > max_chars]
    if long:
        lines = [s for s in lines if len(s) <= max_chars]
        notes.append(f"{len(long)} line(s) longer than {max_chars:,} characters were skipped.")
    if not lines:
        raise ValueError("The file has no line of text. Put one sentence on each line.")
    if len(lines) > max_lines:
        notes.append(
            f"The file has {len(lines):,} sentences; only the first {max_lines} are offered."
        )
        lines = lines[:max_lines]
    if filename.lower().endswith(".csv"):
        notes.append("A CSV file: each whole line is taken as one sentence, commas included.")
    return Upload(tuple(lines), encoding, tuple(notes))
