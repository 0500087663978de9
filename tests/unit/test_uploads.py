"""Reading uploaded sentence files: encodings, caps, refusals, and notes saying what happened."""

from __future__ import annotations

import codecs

import pytest

from viz_transformer.settings import MAX_CHARS
from viz_transformer.text.uploads import MAX_BYTES, MAX_LINES, read_lines

TEXT = "The café is open.\n\n  Über alles, naïve!  \r\nÚltima linha\n"
LINES = ("The café is open.", "Über alles, naïve!", "Última linha")


def test_utf8_without_bom_drops_blank_lines_and_strips():
    up = read_lines(TEXT.encode("utf-8"), "s.txt")
    assert up.lines == LINES and up.encoding == "utf-8" and up.notes == ()


def test_utf8_with_bom_does_not_keep_the_mark():
    up = read_lines(codecs.BOM_UTF8 + TEXT.encode("utf-8"))
    assert up.lines == LINES and up.encoding == "utf-8-sig"
    assert not up.lines[0].startswith("\ufeff")


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_with_bom_in_either_byte_order(codec):
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE}.get(codec, b"")
    up = read_lines(bom + TEXT.encode(codec))  # "utf-16" writes its own BOM
    assert up.lines == LINES and up.encoding == "utf-16"


def test_latin1_fallback_with_a_note():
    up = read_lines(TEXT.encode("latin-1"))
    assert up.lines == LINES and up.encoding == "latin-1"
    assert any("Latin-1" in n for n in up.notes)


def test_binary_files_are_refused():
    with pytest.raises(ValueError, match="binary"):
        read_lines(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "picture.txt")
    control = bytes(range(1, 9)) * 50 + b"a few letters"
    with pytest.raises(ValueError, match="does not look like text"):
        read_lines(control)


def test_empty_and_blank_files_get_messages():
    with pytest.raises(ValueError, match="empty"):
        read_lines(b"")
    with pytest.raises(ValueError, match="no line of text"):
        read_lines(b"\n  \r\n\t\n")


def test_csv_gets_a_note_and_lines_are_whole():
    up = read_lines(b"text,label\nthe cat sat,1\n", "data.CSV")
    assert up.lines == ("text,label", "the cat sat,1")
    assert any("CSV" in n for n in up.notes)


def test_size_cap_drops_the_cut_line_even_inside_a_character():
    data = "ação\n".encode() * 10  # 7 bytes a line: "ç" and "ã" take two
    up = read_lines(data, max_bytes=23)  # 3 whole lines, then "a" and half of "ç"
    assert up.lines == ("ação",) * 3 and up.encoding == "utf-8"
    assert any("only the first" in n and "KB" in n for n in up.notes)
    # UTF-16: BOM + 11.5 characters, "ação\nação\na" and half a "ç"
    assert read_lines(("ação\n" * 10).encode("utf-16"), max_bytes=25).lines == ("ação",) * 2


def test_the_default_size_cap_is_200_kb():
    line = b"a sentence of some length\n"
    up = read_lines(line * (MAX_BYTES // len(line) + 100))
    assert any("200 KB" in n for n in up.notes)
    assert len(up.lines) == MAX_LINES


def test_line_cap_and_long_lines_are_reported():
    data = "\n".join(f"sentence {i}" for i in range(MAX_LINES + 20)).encode()
    up = read_lines(data)
    assert len(up.lines) == MAX_LINES and up.lines[-1] == f"sentence {MAX_LINES - 1}"
    assert any(f"{MAX_LINES + 20:,} sentences" in n for n in up.notes)
    up = read_lines(b"short\n" + b"x" * (MAX_CHARS + 1) + b"\nend")
    assert up.lines == ("short", "end")
    assert any("1 line(s) longer" in n for n in up.notes)
