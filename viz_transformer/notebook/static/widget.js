// viz-transformer's notebook widgets (anywidget, a plain ES module: no build step, no network).
// The head view (BertViz style: queries left, keys right, a line per weight coloured by head)
// and the model view (every layer x head as a small map, the selected one large) draw what
// Python sends (notebook/payload.py) and share the selection through the traits kind, layer,
// head and query: a click sets them, and Python setting them redraws.

// Keyboard and screen reader: tokens are focusable text (arrow keys move, Enter selects the
// query), focus highlights as hover does, canvases are named, the selection is announced
// (aria-live). Colours follow the frontend's theme (widget.css reads JupyterLab's, VS Code's and
// marimo's variables; the maps' colours come from the background drawn).

const ROW = 18; // pixels per token in the head view
const TEXT = 150; // pixels for the token labels on each side
const MID = 170; // pixels of the lines between them
const VIEW = 560; // pixels of the head view's scroll box (the canvas is never taller)
const fmt = (n) => Number(n).toLocaleString("en-US");

function rgbOf(css) {
  const m = String(css).match(/[\d.]+/g) || ["255", "255", "255"];
  return m.slice(0, 3).map(Number);
}

// the maps' colour ramp: the background drawn (weight 0) to a blue that reads on it (weight 1)
function ramp(node) {
  let bg = [255, 255, 255];
  for (let n = node; n && n.nodeType === 1; n = n.parentElement) {
    const c = getComputedStyle(n).backgroundColor;
    const alpha = (c.match(/[\d.]+/g) || [])[3];
    if (c && c !== "transparent" && alpha !== "0") {
      bg = rgbOf(c);
      break;
    }
  }
  const dark = 0.299 * bg[0] + 0.587 * bg[1] + 0.114 * bg[2] < 128;
  return { lo: bg, hi: dark ? [198, 219, 239] : [8, 48, 107], dark };
}

function make(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

// a binary trait arrives as a DataView (or an ArrayBuffer, or bytes in an array)
function bytes(x) {
  if (!x) return new Uint8Array(0);
  if (x instanceof Uint8Array) return x;
  if (x instanceof DataView) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  if (x instanceof ArrayBuffer) return new Uint8Array(x);
  if (ArrayBuffer.isView(x)) return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
  return Uint8Array.from(x);
}

function u16(x) {
  const b = bytes(x);
  const out = new Uint16Array(b.length >> 1);
  new Uint8Array(out.buffer).set(b.subarray(0, out.length * 2)); // copied: aligned, little-endian
  return out;
}

function paint(canvas, cells, rows, cols, colours) {
  canvas.width = cols;
  canvas.height = rows;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(cols, rows);
  const { lo, hi } = colours;
  for (let p = 0; p < rows * cols; p++) {
    const v = cells[p] / 255;
    for (let c = 0; c < 3; c++) img.data[4 * p + c] = lo[c] + v * (hi[c] - lo[c]);
    img.data[4 * p + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
}

// black or white text on a head's colour, whichever contrasts more
function inkOn(hex) {
  const lin = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  const n = parseInt(hex.slice(1), 16);
  const L = 0.2126 * lin((n >> 16) & 255) + 0.7152 * lin((n >> 8) & 255) + 0.0722 * lin(n & 255);
  return (L + 0.05) / 0.05 > 1.05 / (L + 0.05) ? "#000" : "#fff";
}

function rgba(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${alpha.toFixed(2)})`;
}
// ---- the page around the view: the static snapshot, the theme ------------------------------

// The static snapshot Python shows beside the widget (for a saved notebook) is hidden while a
// live view of it is drawn: one style element per snapshot, counted over the views that drew
// it (a widget displayed twice renders twice), removed when the last one is disposed, so a
// kernel restart in the same tab shows the snapshot again.
function hideSnapshot(uid) {
  if (!uid || !/^[\w-]+$/.test(uid)) return () => {};
  let style = document.getElementById(`${uid}-live`);
  if (!style) {
    style = document.createElement("style");
    style.id = `${uid}-live`;
    style.dataset.views = "0";
    style.textContent =
      `.jp-OutputArea-child:has([src*="${uid}"]), .jp-OutputArea-child:has(svg#${uid}), ` +
      `[src*="${uid}"], svg#${uid} { display: none !important; }`;
    document.head.appendChild(style);
  }
  style.dataset.views = String(Number(style.dataset.views) + 1);
  return () => {
    const left = Number(style.dataset.views) - 1;
    style.dataset.views = String(left);
    if (left <= 0) style.remove();
  };
}

// Redraw when the frontend's theme changes: JupyterLab, VS Code, marimo and Colab mark it on
// body or html, and a page without a theme of its own follows the system's dark mode.
const THEME_ATTRIBUTES = ["class", "data-jp-theme-name", "data-jp-theme-light", "data-theme",
  "data-vscode-theme-kind", "theme"]; // prettier-ignore

function watchTheme(onChange) {
  const themed = new MutationObserver(onChange);
  for (const node of [document.body, document.documentElement]) {
    themed.observe(node, { attributes: true, attributeFilter: THEME_ATTRIBUTES });
  }
  const system = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  system?.addEventListener?.("change", onChange);
  return () => {
    themed.disconnect();
    system?.removeEventListener?.("change", onChange);
  };
}

// ---- the view's parts and what they share ---------------------------------------------------

// Everything the drawing functions below share: the model, the elements, the hover and caches.
function makeView(model, el) {
  const kind = model.get("view"); // "head" or "model"
  const root = make("div", `vt-root vt-${kind}`);
  root.setAttribute("role", "group");
  // the frontend's own keyboard shortcuts (JupyterLab's arrow keys move between cells) stay off
  // inside the widget, so its arrow keys and Enter reach the token lists
  root.dataset.lmSuppressShortcuts = "true";
  root.dataset.pSuppressShortcuts = "true";
  const v = {
    model,
    kind,
    root,
    bar: make("div", "vt-bar"),
    kindSel: make("select", "vt-kind"),
    layerSel: make("select", "vt-layer"),
    pairSel: make("select", "vt-pair"), // a sentence pair: which sentence to which
    label: make("span", "vt-label"),
    notice: make("div", "vt-notice"), // what is shown of a long input
    heads: make("div", "vt-heads"), // the head view's colour swatches: show / hide a head
    main: make("div", "vt-main"),
    gridBox: make("div", "vt-grid"),
    note: make("div", "vt-note"),
    live: make("div", "vt-live"), // read by screen readers as it changes
    qkBox: make("div", "vt-qk"), // the selected query's scores split (given the model)
    state: { hover: null, lines: null, linesKey: "", tokensKey: "", colours: null, pair: "" },
    said: "",
  };
  v.kindSel.setAttribute("aria-label", "attention kind");
  v.layerSel.setAttribute("aria-label", "layer");
  v.pairSel.setAttribute("aria-label", "sentences: queries to keys");
  v.pairSel.hidden = true; // shown by the head view of a pair's tokens
  for (const [value, text] of [["", "all sentences"], ["0-0", "A → A"], ["0-1", "A → B"],
    ["1-0", "B → A"], ["1-1", "B → B"]]) { // prettier-ignore
    const o = make("option", "", text);
    o.value = value;
    v.pairSel.appendChild(o);
  }
  v.heads.setAttribute("role", "group");
  v.heads.setAttribute("aria-label", "heads shown (click to hide or show)");
  v.gridBox.setAttribute("role", "group");
  v.gridBox.setAttribute("aria-label", "every head: select one");
  v.live.setAttribute("aria-live", "polite");
  v.live.setAttribute("role", "status");
  v.bar.append(v.kindSel, v.layerSel, v.pairSel, v.label);
  const body = make("div", "vt-body");
  body.append(v.main, v.gridBox);
  root.append(v.bar, v.notice, v.heads, body, v.qkBox, v.live, v.note);
  el.appendChild(root);
  return v;
}

const selected = (v) => [v.model.get("kind"), v.model.get("layer"), v.model.get("head")];
const shapeOf = (v, kind) => v.model.get("header").kinds[kind].shape;
const hiddenHeads = (v) => new Set(v.model.get("hidden") || []);
const colours = (v) => (v.state.colours = v.state.colours || ramp(v.root));

function choose(v, changes) {
  for (const [k, value] of Object.entries(changes)) v.model.set(k, value);
  v.model.save_changes();
}

function say(v, text) {
  if (v.live.textContent !== text) v.live.textContent = text;
}

// ---- the bar: kind, layer, the head swatches ------------------------------------------------

function drawControls(v) {
  const header = v.model.get("header");
  const [kind, layer, head] = selected(v);
  v.root.setAttribute("aria-label", `${header.model}: attention ${v.kind} view`);
  v.kindSel.replaceChildren(
    ...Object.entries(header.kinds).map(([k, info]) => {
      const o = make("option", "", info.title);
      o.value = k;
      o.selected = k === kind;
      return o;
    }),
  );
  const [nLayers, nHeads] = shapeOf(v, kind);
  v.layerSel.replaceChildren(
    ...Array.from({ length: nLayers }, (_, l) => {
      const o = make("option", "", `layer ${l}`);
      o.value = String(l);
      o.selected = l === layer;
      return o;
    }),
  );
  v.label.textContent = `${header.model}: ${kind} · layer ${layer} · head ${head}`;
  const off = hiddenHeads(v);
  v.heads.replaceChildren(
    ...Array.from({ length: v.kind === "head" ? nHeads : 0 }, (_, h) =>
      swatch(v, h, header.colours[h % header.colours.length], off.has(h), h === head, nHeads),
    ),
  );
}

function swatch(v, h, colour, off, on, nHeads) {
  const b = make("button", "vt-swatch", `H${h}`);
  b.style.setProperty("--c", colour);
  b.style.setProperty("--c-ink", inkOn(colour));
  b.dataset.head = String(h);
  b.setAttribute("aria-pressed", String(!off));
  if (on) b.classList.add("vt-on");
  b.setAttribute("aria-label", `head ${h}${on ? " (selected)" : ""}`);
  b.title = `head ${h}: click to hide or show its lines, double-click to show it alone`;
  b.onclick = () => {
    const now = hiddenHeads(v);
    now.has(h) ? now.delete(h) : now.add(h);
    choose(v, { hidden: [...now].sort((a, c) => a - c) });
  };
  b.ondblclick = () =>
    choose(v, { hidden: [...Array(nHeads).keys()].filter((x) => x !== h), head: h });
  return b;
}

function bindControls(v) {
  v.kindSel.onchange = () => {
    const [nLayers, nHeads] = shapeOf(v, v.kindSel.value);
    const layer = Math.min(v.model.get("layer"), nLayers - 1);
    const head = Math.min(v.model.get("head"), nHeads - 1);
    choose(v, { kind: v.kindSel.value, layer, head, query: -1, start: 0 });
  };
  v.layerSel.onchange = () => choose(v, { layer: Number(v.layerSel.value) });
  v.pairSel.onchange = () => {
    v.state.pair = v.pairSel.value;
    requestAnimationFrame(() => drawHeadView(v));
  };
}

// ---- the grid: every head of the kind as a small map ----------------------------------------

function drawGrid(v) {
  const g = v.model.get("grid");
  const [kind, layer, head] = selected(v);
  if (!g.maps || g.kind !== kind) return false;
  const cells = bytes(g.maps);
  const size = g.rows * g.cols;
  const boxes = [make("span", "vt-corner")];
  for (let h = 0; h < g.heads; h++) boxes.push(make("span", "vt-col", `H${h}`));
  for (let l = 0; l < g.layers; l++) {
    boxes.push(make("span", "vt-row", `L${l}`));
    for (let h = 0; h < g.heads; h++) {
      const b = make("button", "vt-cell");
      b.dataset.layer = String(l);
      b.dataset.head = String(h);
      b.setAttribute("aria-pressed", String(l === layer && h === head));
      const top = g.scale[l * g.heads + h].toFixed(2);
      b.setAttribute("aria-label", `layer ${l} head ${h}, largest weight ${top}`);
      b.title = `layer ${l}, head ${h} (largest weight ${top})`;
      const c = make("canvas");
      c.setAttribute("aria-hidden", "true");
      const at = (l * g.heads + h) * size;
      paint(c, cells.subarray(at, at + size), g.rows, g.cols, colours(v));
      b.appendChild(c);
      b.onclick = () => choose(v, { layer: l, head: h });
      boxes.push(b);
    }
  }
  v.gridBox.style.gridTemplateColumns = `auto repeat(${g.heads}, var(--vt-cell))`;
  v.gridBox.replaceChildren(...boxes);
  return true;
}

// ---- the head view: queries left, keys right, a line per weight ----------------------------

function parsedLines(v) {
  const L = v.model.get("lines");
  const key = L.heads ? `${L.kind}/${L.layer}/${L.q0}/${L.k0}/${L.heads.length}` : "";
  if (key !== v.state.linesKey) {
    v.state.linesKey = key;
    v.state.lines = L.heads
      ? L.heads.map((h) => ({ i: u16(h.i), j: u16(h.j), w: bytes(h.w) }))
      : null;
  }
  return L;
}

// the strongest line of head h from query row i (side "q") or into key row j (side "k")
function strongest(v, h, side, row) {
  const { i, j, w } = v.state.lines[h];
  let best = -1;
  for (let e = 0; e < w.length; e++) {
    const at = side === "q" ? i[e] : j[e];
    if (at === row && (best < 0 || w[e] > w[best])) best = e;
  }
  return best < 0 ? null : { i: i[best], j: j[best], w: w[best] / 255 };
}

function announce(v, side, row) {
  const L = v.model.get("lines");
  const header = v.model.get("header");
  const [kind, layer, head] = selected(v);
  const info = header.kinds[kind];
  const rows = header[info.rows];
  const cols = header[info.cols];
  const best = strongest(v, head, side, row);
  const min = L.min || 0.02;
  if (side === "q") {
    const q = L.q0 + row;
    const to = best
      ? `its strongest key is "${cols[L.k0 + best.j]}" (${L.k0 + best.j}), weight ${best.w.toFixed(2)}`
      : `no key weighs ${min} or more`;
    const chosen = v.model.get("query") === q ? "selected " : "";
    say(v, `${chosen}query "${rows[q]}" (${q}), layer ${layer} head ${head}: ${to}`);
  } else {
    const k = L.k0 + row;
    const from = best
      ? `most from query "${rows[L.q0 + best.i]}" (${L.q0 + best.i}), weight ${best.w.toFixed(2)}`
      : `no query gives it ${min} or more`;
    say(v, `key "${cols[k]}" (${k}), layer ${layer} head ${head}: attended ${from}`);
  }
}

// a column of focusable tokens: arrow keys move, Enter or Space selects (queries)
function tokenList(v, tokens, side, name) {
  const list = make("div", `vt-toks vt-${side}s`);
  list.setAttribute("role", "listbox");
  list.setAttribute("aria-label", name);
  tokens.forEach((t, r) => {
    const o = make("div", "vt-tok", String(t).slice(0, 18));
    o.setAttribute("role", "option");
    o.setAttribute("aria-selected", "false");
    o.tabIndex = r === 0 ? 0 : -1;
    o.dataset.row = String(r);
    o.title = String(t);
    list.appendChild(o);
  });
  const rowOf = (e) => {
    const o = e.target.closest(".vt-tok");
    return o ? Number(o.dataset.row) : null;
  };
  const hover = (row) => {
    const was = v.state.hover;
    v.state.hover = row === null ? null : { side, row };
    const now = v.state.hover;
    if (!was || !now || was.side !== side || was.row !== row) {
      requestAnimationFrame(() => drawHeadView(v));
    }
    if (row !== null) announce(v, side, row);
  };
  const pick = (row) => {
    if (side !== "q") return;
    const q = v.model.get("lines").q0 + row;
    choose(v, { query: v.model.get("query") === q ? -1 : q });
  };
  list.onmouseover = (e) => rowOf(e) !== null && hover(rowOf(e));
  list.onmouseleave = () => document.activeElement?.parentElement !== list && hover(null);
  list.addEventListener("focusin", (e) => rowOf(e) !== null && hover(rowOf(e)));
  list.addEventListener("focusout", (e) => !list.contains(e.relatedTarget) && hover(null));
  list.onclick = (e) => rowOf(e) !== null && pick(rowOf(e));
  list.onkeydown = (e) => {
    const row = rowOf(e);
    if (row === null) return;
    const last = list.children.length - 1;
    const to = { ArrowDown: row + 1, ArrowUp: row - 1, Home: 0, End: last }[e.key];
    if (to !== undefined) {
      e.preventDefault();
      e.stopPropagation();
      const next = list.children[Math.max(0, Math.min(last, to))];
      list.children[row].tabIndex = -1;
      next.tabIndex = 0;
      next.focus();
    } else if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      e.stopPropagation();
      pick(row);
    }
  };
  return list;
}

// the token columns are text; between them a canvas as tall as the box, sticky at its top:
// scrolling redraws the rows in view, so a long input never makes a huge bitmap
function lineColumns(v, rows, cols) {
  const scroll = make("div", "vt-scroll");
  const cols3 = make("div", "vt-cols");
  const mid = make("div", "vt-mid");
  const canvas = make("canvas", "vt-lines");
  canvas.setAttribute("role", "img");
  mid.appendChild(canvas);
  cols3.append(tokenList(v, rows, "q", "queries"), mid, tokenList(v, cols, "k", "keys"));
  scroll.appendChild(cols3);
  v.main.replaceChildren(scroll, make("div", "vt-nav"));
  scroll.onscroll = () => requestAnimationFrame(() => drawHeadView(v));
  return canvas;
}

function drawHeadView(v) {
  const L = parsedLines(v);
  const header = v.model.get("header");
  const [kind, layer, head] = selected(v);
  if (!v.state.lines || L.kind !== kind || L.layer !== layer) {
    v.main.replaceChildren(make("div", "vt-wait", "computing…"));
    v.state.tokensKey = "";
    return false;
  }
  const info = header.kinds[kind];
  const rows = header[info.rows].slice(L.q0, L.q0 + L.nq);
  const cols = header[info.cols].slice(L.k0, L.k0 + L.nk);
  const total = Math.max(rows.length, cols.length) * ROW + 8;
  const tokensKey = `${kind}/${L.q0}/${L.k0}/${L.nq}/${L.nk}`;
  let canvas = v.main.querySelector("canvas.vt-lines");
  if (!canvas || v.state.tokensKey !== tokensKey) {
    v.state.tokensKey = tokensKey;
    canvas = lineColumns(v, rows, cols);
  }
  const scroll = v.main.querySelector(".vt-scroll");
  const height = Math.min(total, VIEW);
  const dpr = Math.min(window.devicePixelRatio || 1, 2);
  canvas.width = MID * dpr;
  canvas.height = height * dpr;
  canvas.style.width = `${MID}px`;
  canvas.style.height = `${height}px`;
  const off = hiddenHeads(v);
  const shown = [...v.state.lines.keys()].filter((h) => !off.has(h));
  canvas.setAttribute(
    "aria-label",
    `${info.title}, layer ${layer}: lines from ${fmt(rows.length)} queries to ` +
      `${fmt(cols.length)} keys, one colour per head (heads ${shown.join(", ") || "none"} ` +
      `shown), head ${head} on top; the token lists beside it read each query's strongest key`,
  );
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);
  const top = Math.min(scroll.scrollTop, total - height);
  const query = v.model.get("query") - L.q0;
  strokeLines(v, ctx, { L, info, head, shown, top, height, query });
  markTokens(v, query);
  pageButtons(v, L, shapeOf(v, kind)[2]);
  return true;
}

// every shown head's lines, faded but the selected head's, kept to the hovered or chosen row
function strokeLines(v, ctx, { L, info, head, shown, top, height, query }) {
  const header = v.model.get("header");
  const hover = v.state.hover;
  const segs = header.segments || {};
  const [segQ, segK] = [segs[info.rows], segs[info.cols]];
  v.pairSel.hidden = !(segQ && segK);
  const [wantQ, wantK] = v.state.pair && segQ && segK ? v.state.pair.split("-").map(Number) : [];
  const inPair = (i, j) =>
    wantQ === undefined || (segQ[L.q0 + i] === wantQ && segK[L.k0 + j] === wantK);
  const keep = (i, j) =>
    inPair(i, j) &&
    (hover ? (hover.side === "q" ? i === hover.row : j === hover.row) : query < 0 || i === query);
  const y = (r) => 4 + r * ROW + ROW / 2 - top;
  const order = shown.filter((h) => h !== head).concat(shown.includes(head) ? [head] : []);
  for (const h of order) {
    const { i, j, w } = v.state.lines[h];
    const colour = header.colours[h % header.colours.length];
    const fade = h === head ? 1 : 0.3;
    const paths = Array.from({ length: 11 }, () => new Path2D());
    for (let e = 0; e < w.length; e++) {
      const a = y(i[e]);
      const b = y(j[e]);
      if ((a < 0 && b < 0) || (a > height && b > height) || !keep(i[e], j[e])) continue;
      const p = paths[Math.ceil((w[e] / 255) * 10)];
      p.moveTo(2, a);
      p.lineTo(MID - 2, b);
    }
    ctx.lineWidth = h === head ? 2 : 1.5;
    paths.forEach((p, level) => {
      if (level === 0) return;
      ctx.strokeStyle = rgba(colour, (level / 10) * fade);
      ctx.stroke(p);
    });
  }
}

function markTokens(v, query) {
  const hover = v.state.hover;
  for (const [side, chosen] of [["q", query], ["k", -1]]) {
    const list = v.main.querySelector(`.vt-${side}s`);
    for (const o of list.children) {
      const r = Number(o.dataset.row);
      const on = (hover && hover.side === side && hover.row === r) || r === chosen;
      o.classList.toggle("vt-hot", on);
      if (side === "q") o.setAttribute("aria-selected", String(r === chosen));
    }
  }
}

// a long input's rows come a window at a time: earlier / later
function pageButtons(v, L, all) {
  const nav = v.main.querySelector(".vt-nav");
  if (all <= L.nq) {
    nav.replaceChildren();
    return;
  }
  const step = (d) => () => choose(v, { start: Math.max(0, Math.min(all - 1, L.q0 + d)) });
  const prev = make("button", "vt-prev", "◀ earlier");
  const next = make("button", "vt-next", "later ▶");
  prev.disabled = L.q0 === 0;
  next.disabled = L.q0 + L.nq >= all;
  prev.onclick = step(-L.nq);
  next.onclick = step(L.nq);
  nav.replaceChildren(prev, next);
}

// ---- the model view: the selected head's map, large -----------------------------------------

function drawModelView(v) {
  const f = v.model.get("focus");
  const header = v.model.get("header");
  const [kind, layer, head] = selected(v);
  if (!f.map || f.kind !== kind || f.layer !== layer || f.head !== head) {
    v.main.replaceChildren(make("div", "vt-wait", "computing…"));
    return false;
  }
  const info = header.kinds[kind];
  const [, , nQ, nK] = shapeOf(v, kind);
  const canvas = make("canvas", "vt-focus");
  paint(canvas, bytes(f.map), f.rows, f.cols, colours(v));
  const scale = 340 / Math.max(f.rows, f.cols);
  canvas.style.width = `${Math.round(f.cols * scale)}px`;
  canvas.style.height = `${Math.round(f.rows * scale)}px`;
  canvas.setAttribute("role", "img");
  canvas.setAttribute(
    "aria-label",
    `${info.title}, layer ${layer}, head ${head}: ${fmt(nQ)} queries by ${fmt(nK)} keys, ` +
      `largest weight ${f.scale.toFixed(2)}`,
  );
  const title = make("div", "vt-title", `${info.title}, layer ${layer}, head ${head}`);
  const [bq, bk] = f.block;
  const coarse = bq > 1 || bk > 1 ? `block maxima of ${bq} x ${bk} weights` : "";
  const readout = make("div", "vt-readout", coarse || "hover a cell for its weight");
  canvas.onmousemove = (e) => {
    const r = canvas.getBoundingClientRect();
    const row = Math.min(f.rows - 1, Math.floor(((e.clientY - r.top) / r.height) * f.rows));
    const col = Math.min(f.cols - 1, Math.floor(((e.clientX - r.left) / r.width) * f.cols));
    const w = (bytes(f.map)[row * f.cols + col] / 255) * f.scale;
    const q = header[info.rows][row * bq];
    const k = header[info.cols][col * bk];
    const span = (a, b, n) => (b > 1 ? `${a * b}-${Math.min(n, (a + 1) * b) - 1}` : `${a}`);
    readout.textContent =
      `query ${span(row, bq, nQ)} "${q}" → key ${span(col, bk, nK)} "${k}": ` +
      `${bq * bk > 1 ? "max " : ""}${w.toFixed(3)}`;
  };
  v.main.replaceChildren(title, labelled(canvas, f, scale, header, info), readout);
  return true;
}

// the map with its query tokens on the left and key tokens on top, at full resolution only
function labelled(canvas, f, scale, header, info) {
  const [bq, bk] = f.block;
  if (bq > 1 || bk > 1 || scale < 8) return canvas;
  const box = make("div", "vt-map");
  box.style.gridTemplateColumns = `auto ${Math.round(f.cols * scale)}px`;
  box.style.setProperty("--vt-px", `${Math.min(12, Math.floor(scale) - 1)}px`);
  const strip = (tokens, cls) => {
    const s = make("div", cls);
    s.style.setProperty("--vt-cell", `${scale}px`);
    s.append(...tokens.map((t) => make("span", "", String(t).slice(0, 14))));
    return s;
  };
  box.append(make("span"), strip(header[info.cols], "vt-keys"));
  box.append(strip(header[info.rows], "vt-queries"), canvas);
  return box;
}

// ---- the query-key panel: why the selected query attends to its strongest keys --------------

function drawQueryKey(v) {
  const qk = v.model.get("qk") || {};
  const [kind, layer, head] = selected(v);
  const q = v.model.get("query");
  const here = qk.kind === kind && qk.layer === layer && qk.head === head && qk.query === q;
  if (v.kind !== "head" || q < 0) {
    v.qkBox.replaceChildren();
    return;
  }
  if (!here || qk.pending) {
    // Python computes the panel in a thread of its own: the kernel keeps answering meanwhile
    const wait = here ? [make("div", "vt-wait", "taking the score apart…")] : [];
    v.qkBox.replaceChildren(...wait);
    return;
  }
  if (qk.error) {
    v.qkBox.replaceChildren(make("div", "vt-readout", `query-key view: ${qk.error}`));
    return;
  }
  const header = v.model.get("header");
  const info = header.kinds[kind];
  const values = new Float32Array(bytes(qk.values).slice().buffer);
  const canvas = scoreCanvas(v, values, qk.parts.length, qk.keys.length);
  const rows = qk.keys.map((k, r) => {
    const row = values.slice(r * qk.parts.length, (r + 1) * qk.parts.length);
    let best = 0;
    row.forEach((x, p) => {
      if (Math.abs(x) > Math.abs(row[best]) && qk.parts[p] !== "rest") best = p;
    });
    return `"${header[info.cols][k]}" (${k}): weight ${qk.weights[r].toFixed(2)}, score ` +
      `${qk.scores[r].toFixed(2)}, largest part ${qk.parts[best]} ${row[best] >= 0 ? "+" : ""}` +
      `${row[best].toFixed(2)}`;
  });
  canvas.setAttribute(
    "aria-label",
    `score parts by dimension, red raises, blue lowers: ${rows.join("; ")}`,
  );
  const labels = make("div", "vt-toks vt-qkkeys");
  labels.append(...rows.map((r) => make("div", "vt-tok", r)));
  const title = make(
    "div",
    "vt-title",
    `Query "${header[info.rows][q]}" (${q}), head ${head}: its score on its strongest keys ` +
      `taken apart by dimension of q and k (vt.score_parts; red raises, blue lowers)`,
  );
  const grid = make("div", "vt-qkgrid");
  grid.append(labels, canvas);
  v.qkBox.replaceChildren(title, grid);
}

// keys x parts, red where a part raises the score, blue where it lowers it
function scoreCanvas(v, values, nParts, nKeys) {
  const top = Math.max(1e-9, ...Array.from(values, Math.abs));
  const canvas = make("canvas", "vt-qkmap");
  canvas.width = nParts;
  canvas.height = nKeys;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(nParts, nKeys);
  const { lo } = colours(v);
  const pos = [178, 24, 43];
  const neg = [33, 102, 172];
  values.forEach((x, p) => {
    const a = Math.min(1, Math.abs(x) / top);
    const c = x >= 0 ? pos : neg;
    for (let k = 0; k < 3; k++) img.data[4 * p + k] = lo[k] + a * (c[k] - lo[k]);
    img.data[4 * p + 3] = 255;
  });
  ctx.putImageData(img, 0, 0);
  canvas.style.width = `${Math.max(160, nParts * 6)}px`;
  canvas.style.height = `${nKeys * ROW}px`;
  canvas.setAttribute("role", "img");
  return canvas;
}

// ---- what the view says: a long input's part, the notes, the announcement ------------------

function noticeText(v) {
  const header = v.model.get("header");
  const kind = v.model.get("kind");
  const info = header.kinds[kind];
  const cut = header.cut || {};
  const parts = [...new Set([info.rows, info.cols])].filter((s) => cut[s]).map((s) => cut[s]);
  const L = v.model.get("lines");
  const all = shapeOf(v, kind)[2];
  if (v.kind === "head" && L.kind === kind && all > L.nq) {
    parts.push(`rows ${fmt(L.q0 + 1)}-${fmt(L.q0 + L.nq)} of ${fmt(all)}`);
  }
  return parts.join("; ");
}

function announceSelection(v) {
  const [kind, layer, head] = selected(v);
  const now = `${kind} ${layer} ${head} ${v.model.get("query")}`;
  if (now === v.said) return;
  v.said = now;
  const q = v.model.get("query");
  const L = v.model.get("lines");
  if (v.kind === "head" && q >= L.q0 && q < L.q0 + L.nq) announce(v, "q", q - L.q0);
  else say(v, `${kind}, layer ${layer}, head ${head} selected`);
}

// stamped once the browser has painted a frame with the selection (rasterising counts)
function stampDrawn(v) {
  const stamp = selected(v).join(" ");
  requestAnimationFrame(() =>
    setTimeout(() => {
      if (selected(v).join(" ") !== stamp) return;
      v.root.dataset.selected = stamp;
      v.root.dataset.drawn = String(Date.now());
    }),
  );
}

function draw(v) {
  // the grid and the swatches are rebuilt: keep the keyboard's place on the same button
  const had = document.activeElement;
  const place =
    v.root.contains(had) && had.matches(".vt-cell, .vt-swatch")
      ? `.${had.classList[0]}[data-head="${had.dataset.head}"]` +
        (had.dataset.layer ? `[data-layer="${had.dataset.layer}"]` : "")
      : null;
  drawControls(v);
  const grid = drawGrid(v);
  if (place) v.root.querySelector(place)?.focus();
  const big = v.kind === "head" ? drawHeadView(v) : drawModelView(v);
  drawQueryKey(v);
  v.note.textContent = Object.values(v.model.get("header").notes || {}).join(" ");
  v.notice.textContent = noticeText(v);
  v.notice.hidden = !v.notice.textContent;
  if (big) announceSelection(v);
  delete v.root.dataset.drawn;
  if (grid && big) stampDrawn(v);
}

const EVENTS = ["kind", "layer", "head", "query", "hidden", "grid", "lines", "focus", "header",
  "qk"].map((name) => `change:${name}`); // prettier-ignore

function render({ model, el }) {
  const v = makeView(model, el);
  bindControls(v);
  const shown = hideSnapshot(model.get("uid"));
  const redraw = () => draw(v);
  const unwatch = watchTheme(() => {
    v.state.colours = null;
    v.state.tokensKey = "";
    draw(v);
  });
  for (const e of EVENTS) model.on(e, redraw);
  draw(v);
  return () => {
    unwatch();
    shown();
    for (const e of EVENTS) model.off(e, redraw);
  };
}

export default { render };
