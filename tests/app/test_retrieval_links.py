"""A retrieval run's link inside a plotly figure (``retrieval_view.for_plotly``): plotly rewrites
a link as ``encodeURI(decodeURI(url))``, emulated here, and the link must read back to the same
view after it; where it could not, no link is drawn (the run's table row keeps it)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote

# decodeURI leaves the escapes of these characters as they are; encodeURI then escapes their "%"
_KEPT = set(";/?:@&=+$,#")


def _decode_uri(text: str) -> str:
    """JavaScript's decodeURI: a run of escapes decoded as UTF-8, but for those of ``_KEPT``."""

    def run(m: re.Match) -> str:
        parts = re.findall(r"%[0-9A-Fa-f]{2}", m.group(0))
        out, pending = "", ""
        for part in parts:
            if unquote(part) in _KEPT:
                out, pending = out + unquote(pending) + part, ""
            else:
                pending += part
        return out + unquote(pending)

    return re.sub(r"(%[0-9A-Fa-f]{2})+", run, text)


def _encode_uri(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe=";/?:@&=+$,#-_.!~*'()")


def _as_plotly_writes(url: str) -> str:
    return _encode_uri(_decode_uri(url))


def test_a_link_reads_back_the_same_after_plotly() -> None:
    from viz_transformer.ui.retrieval_view import for_plotly

    view = [("model", "hf:/tmp/planted"), ("ret_run", "h:0123456789abcdef|0.5|0|copy|zeta eta"),
            ("sentence", "Où est la gare? 3:30, a/b; c@d $5")]  # fmt: skip
    from urllib.parse import urlencode

    url = "attention_maps?" + urlencode(view)
    assert "%253A" in _as_plotly_writes(url)  # the plain link breaks in plotly
    safe = for_plotly(url)
    assert safe is not None
    written = _as_plotly_writes(safe)
    assert parse_qsl(written.split("?", 1)[1]) == view


def test_no_link_where_plotly_would_break_it() -> None:
    from urllib.parse import urlencode

    from viz_transformer.ui.retrieval_view import for_plotly

    for value in ("fish & chips", "a=b", "1+1", "#3"):
        assert for_plotly("attention_maps?" + urlencode({"sentence": value})) is None
