"""How a Hugging Face tokenizer's pieces are shown on every page: word markers removed, a piece
that continues a word marked "##", byte-level pieces shown as the characters they encode."""

from __future__ import annotations

from functools import cache


@cache
def _byte_of() -> dict[str, int]:
    """GPT-2's byte-level alphabet read backwards: the printable character that stands for each
    byte -> the byte (``Ġ`` -> 0x20 space, ``Ċ`` -> 0x0A newline; GPT-2, Llama 3, SmolLM2, Qwen
    all use this table)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:  # the unprintable bytes were moved to 256 and up, in order
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


def byte_text(piece: str) -> str:
    """The text a byte-level piece encodes (``ĠâĢĻs`` -> `` ’s``); a byte that does not complete
    a character (an emoji split over pieces) as ``<0xF0>``, as SentencePiece's byte pieces read;
    a piece outside the byte alphabet (a special token) unchanged."""
    table = _byte_of()
    if any(c not in table for c in piece):
        return piece
    raw = bytes(table[c] for c in piece)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(b) if b < 0x80 else f"<0x{b:02X}>" for b in raw)


_SHOWN = str.maketrans({"\n": "↵", "\t": "⇥", "\r": "␍"})


def pretty_tokens(
    tokens: list[str],
    marks_starts: bool = False,
    text_start: frozenset[str] | None = None,
    byte_level: bool = False,
) -> tuple[str, ...]:
    """Display tokens: the byte-level "Ġ" and SentencePiece "▁" word markers removed (as bertviz
    does), special tokens ([CLS], </s>, <pad>) kept; a bare marker stays visible, as "▁" for
    every tokenizer (a lone space piece looks alike on every page). With ``byte_level`` (a
    GPT-2-style byte-level tokenizer) a piece shows the characters its bytes encode: newline and
    tab as "↵" and "⇥", "âĢĻ" as "’".

    With ``marks_starts`` (a tokenizer that marks where a word *starts*: "Ġ", "▁"), a piece
    without the mark that starts with a letter or digit continues a word: it gets "##" in front,
    as BERT's WordPiece pieces already have it, unless the piece before it in ``tokens`` does not
    end in a letter or digit (after a newline, a quote or "<s>" a piece starts a word). The
    first piece, with nothing before it, is marked by its own look; ``text_start`` (the special
    tokens) says the pieces begin a text, whose first non-special piece starts a word with no
    mark before it ("The", not "##The").
    """
    texts = [byte_text(t) if byte_level else t for t in tokens]
    first = next((k for k, t in enumerate(tokens) if t not in (text_start or ())), -1)
    shown = []
    for k, text in enumerate(texts):
        starts = text[:1] in " ▁Ġ" if byte_level else text[:1] in "Ġ▁"
        glued = marks_starts and text[:1].isalnum() and not starts
        if k > 0 and not texts[k - 1][-1:].isalnum():
            glued = False  # nothing to continue: the piece before is not a word
        if text_start is not None and k == first:
            glued = False
        body = text.lstrip(" ▁Ġ" if byte_level else "Ġ▁") or "▁"
        body = body.translate(_SHOWN) if byte_level else body
        shown.append(f"##{body}" if glued else body)
    return tuple(shown)


def token_labels(tokenizer, ids: list[int], text_start: bool = True) -> tuple[str, ...]:
    """``HFModel.token_labels`` (called with the tokenizer's lock held): display strings of
    ``ids`` through ``pretty_tokens``, an id the tokenizer has no token for as ``<id N>``."""
    marks = {t[:1] for t in tokenizer.tokenize(" the word")}
    specials = frozenset(tokenizer.all_special_tokens) if text_start else None
    tokens = tokenizer.convert_ids_to_tokens(ids)
    # an embedding larger than the vocabulary (rows padded to a multiple of 64, say) can
    # predict an id the tokenizer has no token for: name the id
    tokens = [f"<id {i}>" if t is None else t for i, t in zip(ids, tokens, strict=True)]
    return pretty_tokens(tokens, bool(marks & {"Ġ", "▁"}), specials, "Ġ" in marks)


def token_offsets(tokenizer, name: str, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """``HFModel.token_offsets`` (the lock held): ids and character spans, special tokens
    ``(0, 0)``.

    Raises:
        ValueError: a slow tokenizer, which gives no offsets.
    """
    try:
        enc = tokenizer(text, return_offsets_mapping=True)
    except NotImplementedError as exc:
        raise ValueError(
            f"{name}'s tokenizer gives no character offsets (a slow tokenizer); use a model "
            "with a fast tokenizer."
        ) from exc
    return list(enc["input_ids"]), [(int(a), int(b)) for a, b in enc["offset_mapping"]]
