"""What a notebook view leaves behind when the kernel is gone, drawn in Python without the kernel
or the widget manager:

- ``snapshot``: an SVG of the current view for the output's mimebundle, so a saved notebook,
  nbconvert's HTML and a repository's notebook preview show it offline (the head view: the
  selected layer's lines of the first ``SNAP_ROWS`` query rows, one colour per head, the selected
  head on top, the others' weights of at least ``OTHERS_MIN``; the model view: the selected
  head's map as an embedded PNG);
- ``page``: a self-contained, offline, interactive HTML page of the view (``view.save``): the
  widget's own JavaScript and CSS inlined, every layer's lines and every head's map of every kind
  inlined, a small stand-in for the widget model; no CDN, no network.
"""

from __future__ import annotations

import base64
import html
import json
import struct
import zlib
from typing import Any

import numpy as np

from viz_transformer.notebook import payload

SNAP_ROWS = 40  # query rows (and keys) the head view's snapshot draws
OTHERS_MIN = 0.1  # the lightest weight the snapshot draws of a head other than the selected one
ROW, TEXT, MID = 18, 150, 170  # as the widget draws them (static/widget.js)
INK = np.array([8, 48, 107], np.float64)  # plotly's darkest "Blues": weight 1 on white


def png(cells: bytes, rows: int, cols: int) -> bytes:
    """uint8 weights (row-major, 255 = the map's largest) as an RGB PNG, white to dark blue."""
    v = np.frombuffer(cells, np.uint8).reshape(rows, cols, 1) / 255.0
    rgb = np.rint(255 - v * (255 - INK)).astype(np.uint8)
    raw = b"".join(b"\x00" + rgb[r].tobytes() for r in range(rows))

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    head = struct.pack(">IIBBBBB", cols, rows, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(raw, 6))
        + chunk(b"IEND", b"")
    )


def _text(
    x: float, y: float, s: str, anchor: str = "start", bold: bool = False, limit: int = 18
) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (
        f'<text x="{x:.0f}" y="{y:.1f}" text-anchor="{anchor}"{weight}>'
        f"{html.escape(str(s)[:limit])}</text>"
    )


def _head_lines(state: dict[str, Any], header: dict[str, Any], top: float) -> list[str]:
    """The selected layer's lines within the first ``SNAP_ROWS`` rows and keys."""
    lines, head, hidden = state["lines"], state["head"], set(state.get("hidden", []))
    out = []
    order = [h for h in range(len(lines["heads"])) if h != head and h not in hidden]
    for h in [*order, *([head] if head not in hidden else [])]:
        data = lines["heads"][h]
        i = np.frombuffer(data["i"], "<u2")
        j = np.frombuffer(data["j"], "<u2")
        w = np.frombuffer(data["w"], np.uint8) / 255.0
        keep = (i < SNAP_ROWS) & (j < SNAP_ROWS)
        if h != head:  # the other heads' faint lines would only grow the file
            keep &= w >= OTHERS_MIN
        if state.get("query", -1) >= lines["q0"]:
            keep &= i == state["query"] - lines["q0"]
        colour = header["colours"][h % len(header["colours"])]
        fade = 1.0 if h == head else 0.3
        for a, b, weight in zip(i[keep], j[keep], w[keep], strict=True):
            y1, y2 = top + a * ROW + ROW / 2, top + b * ROW + ROW / 2
            out.append(
                f'<line x1="{TEXT + 2}" y1="{y1:.1f}" x2="{TEXT + MID - 2}" y2="{y2:.1f}" '
                f'stroke="{colour}" stroke-opacity="{weight * fade:.2f}" '
                f'stroke-width="{2 if h == head else 1.5}"/>'
            )
    return out


def snapshot(state: dict[str, Any], uid: str) -> str:
    """An SVG of a view's current state (``AttentionView`` traits: ``view``, ``header``,
    ``kind``, ``layer``, ``head``, ``lines`` or ``focus``, ``hidden``, ``query``); ``uid`` is
    its element id, which the live widget uses to hide the snapshot while it runs."""
    header, kind, layer, head = state["header"], state["kind"], state["layer"], state["head"]
    info = header["kinds"][kind]
    title = f"{header['model']}: {info['title']}, layer {layer}, head {head}"
    notes = [
        header.get("cut", {})[s]
        for s in dict.fromkeys([info["rows"], info["cols"]])
        if s in header.get("cut", {})
    ]
    body, width, top = [], TEXT * 2 + MID, 46.0
    if state["view"] == "head":
        lines = state["lines"]
        rows = header[info["rows"]][lines["q0"] : lines["q0"] + min(lines["nq"], SNAP_ROWS)]
        cols = header[info["cols"]][lines["k0"] : lines["k0"] + min(lines["nk"], SNAP_ROWS)]
        n_q = info["shape"][2]
        if n_q > len(rows) or info["shape"][3] > len(cols):
            notes.append(f"snapshot: rows 1-{len(rows)} of {n_q:,}; run the cell for all")
        body += _head_lines(state, header, top)
        body += [_text(TEXT - 8, top + r * ROW + ROW / 2 + 4, t, "end") for r, t in enumerate(rows)]
        body += [_text(TEXT + MID + 8, top + r * ROW + ROW / 2 + 4, t) for r, t in enumerate(cols)]
        height = top + max(len(rows), len(cols)) * ROW + 8
    else:
        f = state["focus"]
        side = 340
        scale = side / max(f["rows"], f["cols"])
        w, h = f["cols"] * scale, f["rows"] * scale
        image = base64.b64encode(png(bytes(f["map"]), f["rows"], f["cols"])).decode()
        body.append(
            f'<image x="0" y="{top}" width="{w:.0f}" height="{h:.0f}" '
            f'preserveAspectRatio="none" style="image-rendering:pixelated" '
            f'href="data:image/png;base64,{image}"/>'
        )
        width, height = max(width, w), top + h + 8
    head_text = [_text(0, 16, title, bold=True, limit=200)]
    if notes:
        note = _text(0, 34, "; ".join(notes), limit=200)
        head_text.append(note.replace("<text", '<text font-size="11"'))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{uid}" width="{width:.0f}" '
        f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        'font-family="system-ui, sans-serif" font-size="12" role="img">'
        f"<title>{html.escape(title)} (a snapshot: run the cell for the live view)</title>"
        f'<rect width="100%" height="100%" fill="#fff"/><g fill="#1a1a1a">'
        + "".join(head_text)
        + "".join(body)
        + "</g></svg>"
    )


def _plain(x: Any) -> Any:
    """A state with its binary values as ``{"b64": ...}`` (the page decodes them)."""
    if isinstance(x, bytes | bytearray | memoryview):
        return {"b64": base64.b64encode(bytes(x)).decode()}
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    return x


def pages(trace: Any, view: str) -> dict[str, Any]:
    """Every kind's grid, and its every layer's lines (head view, first window) or every head's
    map (model view): what the page shows without a kernel."""
    out = {}
    for kind in trace.kinds:
        n_layers, n_heads = trace.get(kind).shape[:2]
        one = {"grid": payload.grid(trace, kind)}
        if view == "head":
            one["lines"] = [payload.lines(trace, kind, layer) for layer in range(n_layers)]
        else:
            one["focus"] = [
                [payload.focus(trace, kind, layer, head) for head in range(n_heads)]
                for layer in range(n_layers)
            ]
        out[kind] = one
    return out


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{css}</style></head>
<body><main><h1 style="font:600 16px system-ui,sans-serif">{title}</h1><div id="view"></div>
<p style="font:12px system-ui,sans-serif">Saved from a notebook by viz-transformer: works
offline, without Python.</p></main>
<script type="module">
const ESM = {esm};
const STATE = {state};
const PAGES = {pages};
const unpack = (x) => {{
  if (!x || typeof x !== "object") return x;
  if (Array.isArray(x)) return x.map(unpack);
  if ("b64" in x && Object.keys(x).length === 1) {{
    return Uint8Array.from(atob(x.b64), (c) => c.charCodeAt(0));
  }}
  return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, unpack(v)]));
}};
const data = unpack(STATE);
const pages = unpack(PAGES);
const on = {{}};
const pending = new Set();
function fill() {{
  const p = pages[data.kind];
  data.grid = p.grid;
  if (p.lines) data.lines = p.lines[data.layer];
  if (p.focus) data.focus = p.focus[data.layer][data.head];
}}
const model = {{
  get: (k) => data[k],
  set: (k, v) => {{ data[k] = v; pending.add(k); }},
  save_changes: () => {{
    fill();
    const names = new Set([...pending, "grid", "lines", "focus"]);
    pending.clear();
    for (const k of names) for (const f of on["change:" + k] || []) f();
  }},
  on: (e, f) => (on[e] = on[e] || []).push(f),
  off: (e, f) => (on[e] = (on[e] || []).filter((g) => g !== f)),
  send: () => {{}},
}};
fill();
const url = URL.createObjectURL(new Blob([ESM], {{ type: "text/javascript" }}));
const widget = (await import(url)).default;
widget.render({{ model, el: document.getElementById("view") }});
</script></body></html>
"""


def page(trace: Any, state: dict[str, Any], esm: str, css: str) -> str:
    """A self-contained interactive HTML page of a view (``AttentionView.save``)."""
    keep = ("view", "header", "kind", "layer", "head", "query", "hidden", "start", "uid", "qk")
    start = {k: state[k] for k in keep if k in state} | {"start": 0}
    title = f"{state['header']['model']}: attention {state['view']} view"

    def js(x: Any) -> str:  # JSON that cannot close the script element
        return json.dumps(x, separators=(",", ":")).replace("</", "<\\/")

    return PAGE.format(
        title=html.escape(title),
        css=css,
        esm=js(esm),
        state=js(_plain(start)),
        pages=js(_plain(pages(trace, state["view"]))),
    )
