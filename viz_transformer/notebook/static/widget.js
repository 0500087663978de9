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

function render({ model, el }) {
  const view = model.get("view");
  const root = make("div", `vt-root vt-${view}`);
  root.setAttribute("role", "group");
  // the frontend's own keyboard shortcuts (JupyterLab's arrow keys move between cells) stay off
  // inside the widget, so its arrow keys and Enter reach the token lists
  root.dataset.lmSuppressShortcuts = "true";
  root.dataset.pSuppressShortcuts = "true";
  const bar = make("div", "vt-bar");
  const kindSel = make("select", "vt-kind");
  kindSel.setAttribute("aria-label", "attention kind");
  const layerSel = make("select", "vt-layer");
  layerSel.setAttribute("aria-label", "layer");
  const label = make("span", "vt-label");
  const pairSel = make("select", "vt-pair"); // a sentence pair: which sentence to which
  pairSel.setAttribute("aria-label", "sentences: queries to keys");
  pairSel.hidden = true; // shown by the head view of a pair's tokens
  for (const [v, text] of [["", "all sentences"], ["0-0", "A → A"], ["0-1", "A → B"],
    ["1-0", "B → A"], ["1-1", "B → B"]]) { // prettier-ignore
    const o = make("option", "", text);
    o.value = v;
    pairSel.appendChild(o);
  }
  pairSel.onchange = () => {
    state.pair = pairSel.value;
    requestAnimationFrame(drawLines);
  };
  bar.append(kindSel, layerSel, pairSel, label);
  const notice = make("div", "vt-notice"); // what is shown of a long input
  const heads = make("div", "vt-heads"); // the head view's colour swatches: show / hide a head
  heads.setAttribute("role", "group");
  heads.setAttribute("aria-label", "heads shown (click to hide or show)");
  const body = make("div", "vt-body");
  const main = make("div", "vt-main");
  const gridBox = make("div", "vt-grid");
  gridBox.setAttribute("role", "group");
  gridBox.setAttribute("aria-label", "every head: select one");
  const note = make("div", "vt-note");
  const live = make("div", "vt-live"); // read by screen readers as it changes
  live.setAttribute("aria-live", "polite");
  live.setAttribute("role", "status");
  const qkBox = make("div", "vt-qk"); // the selected query's scores split (given the model)
  body.append(main, gridBox);
  root.append(bar, notice, heads, body, qkBox, live, note);
  el.appendChild(root);

  // the static snapshot Python shows beside the widget (for a saved notebook): hidden while live
  const uid = model.get("uid");
  if (uid && /^[\w-]+$/.test(uid) && !document.getElementById(`${uid}-live`)) {
    const hide = document.createElement("style");
    hide.id = `${uid}-live`;
    hide.textContent =
      `.jp-OutputArea-child:has([src*="${uid}"]), .jp-OutputArea-child:has(svg#${uid}), ` +
      `[src*="${uid}"], svg#${uid} { display: none !important; }`;
    document.head.appendChild(hide);
  }

  const state = { hover: null, lines: null, linesKey: "", tokensKey: "", colours: null, pair: "" };
  const sel = () => [model.get("kind"), model.get("layer"), model.get("head")];
  const shape = (kind) => model.get("header").kinds[kind].shape;
  const hidden = () => new Set(model.get("hidden") || []);
  const choose = (changes) => {
    for (const [k, v] of Object.entries(changes)) model.set(k, v);
    model.save_changes();
  };
  const colours = () => (state.colours = state.colours || ramp(root));
  const say = (text) => {
    if (live.textContent !== text) live.textContent = text;
  };

  function controls() {
    const header = model.get("header");
    const [kind, layer, head] = sel();
    root.setAttribute("aria-label", `${header.model}: attention ${view} view`);
    kindSel.replaceChildren(
      ...Object.entries(header.kinds).map(([k, info]) => {
        const o = make("option", "", info.title);
        o.value = k;
        o.selected = k === kind;
        return o;
      }),
    );
    const [nLayers, nHeads] = shape(kind);
    layerSel.replaceChildren(
      ...Array.from({ length: nLayers }, (_, l) => {
        const o = make("option", "", `layer ${l}`);
        o.value = String(l);
        o.selected = l === layer;
        return o;
      }),
    );
    label.textContent = `${header.model}: ${kind} · layer ${layer} · head ${head}`;
    const off = hidden();
    heads.replaceChildren(
      ...Array.from({ length: view === "head" ? nHeads : 0 }, (_, h) => {
        const b = make("button", "vt-swatch", `H${h}`);
        const colour = header.colours[h % header.colours.length];
        b.style.setProperty("--c", colour);
        b.style.setProperty("--c-ink", inkOn(colour));
        b.dataset.head = String(h);
        b.setAttribute("aria-pressed", String(!off.has(h)));
        if (h === head) b.classList.add("vt-on");
        b.setAttribute("aria-label", `head ${h}${h === head ? " (selected)" : ""}`);
        b.title = `head ${h}: click to hide or show its lines, double-click to show it alone`;
        b.onclick = () => {
          const now = hidden();
          now.has(h) ? now.delete(h) : now.add(h);
          choose({ hidden: [...now].sort((a, b) => a - b) });
        };
        b.ondblclick = () =>
          choose({ hidden: [...Array(nHeads).keys()].filter((x) => x !== h), head: h });
        return b;
      }),
    );
  }

  kindSel.onchange = () => {
    const [nLayers, nHeads] = shape(kindSel.value);
    const layer = Math.min(model.get("layer"), nLayers - 1);
    const head = Math.min(model.get("head"), nHeads - 1);
    choose({ kind: kindSel.value, layer, head, query: -1, start: 0 });
  };
  layerSel.onchange = () => choose({ layer: Number(layerSel.value) });

  function drawGrid() {
    const g = model.get("grid");
    const [kind, layer, head] = sel();
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
        const on = l === layer && h === head;
        b.setAttribute("aria-pressed", String(on));
        const top = g.scale[l * g.heads + h].toFixed(2);
        b.setAttribute("aria-label", `layer ${l} head ${h}, largest weight ${top}`);
        b.title = `layer ${l}, head ${h} (largest weight ${top})`;
        const c = make("canvas");
        c.setAttribute("aria-hidden", "true");
        const at = (l * g.heads + h) * size;
        paint(c, cells.subarray(at, at + size), g.rows, g.cols, colours());
        b.appendChild(c);
        b.onclick = () => choose({ layer: l, head: h });
        boxes.push(b);
      }
    }
    gridBox.style.gridTemplateColumns = `auto repeat(${g.heads}, var(--vt-cell))`;
    gridBox.replaceChildren(...boxes);
    return true;
  }

  function parsedLines() {
    const L = model.get("lines");
    const key = L.heads ? `${L.kind}/${L.layer}/${L.q0}/${L.k0}/${L.heads.length}` : "";
    if (key !== state.linesKey) {
      state.linesKey = key;
      state.lines = L.heads
        ? L.heads.map((h) => ({ i: u16(h.i), j: u16(h.j), w: bytes(h.w) }))
        : null;
    }
    return L;
  }

  // the strongest line of head h from query row i (side "q") or into key row j (side "k")
  function strongest(h, side, row) {
    const { i, j, w } = state.lines[h];
    let best = -1;
    for (let e = 0; e < w.length; e++) {
      const at = side === "q" ? i[e] : j[e];
      if (at === row && (best < 0 || w[e] > w[best])) best = e;
    }
    return best < 0 ? null : { i: i[best], j: j[best], w: w[best] / 255 };
  }

  function announce(side, row) {
    const L = model.get("lines");
    const header = model.get("header");
    const [kind, layer, head] = sel();
    const info = header.kinds[kind];
    const rows = header[info.rows];
    const cols = header[info.cols];
    const best = strongest(head, side, row);
    const min = L.min || 0.02;
    if (side === "q") {
      const q = L.q0 + row;
      const to = best
        ? `its strongest key is "${cols[L.k0 + best.j]}" (${L.k0 + best.j}), weight ${best.w.toFixed(2)}`
        : `no key weighs ${min} or more`;
      const chosen = model.get("query") === q ? "selected " : "";
      say(`${chosen}query "${rows[q]}" (${q}), layer ${layer} head ${head}: ${to}`);
    } else {
      const k = L.k0 + row;
      const from = best
        ? `most from query "${rows[L.q0 + best.i]}" (${L.q0 + best.i}), weight ${best.w.toFixed(2)}`
        : `no query gives it ${min} or more`;
      say(`key "${cols[k]}" (${k}), layer ${layer} head ${head}: attended ${from}`);
    }
  }

  // a column of focusable tokens: arrow keys move, Enter or Space selects (queries)
  function tokenList(tokens, side, name) {
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
      const was = state.hover;
      state.hover = row === null ? null : { side, row };
      if (!was || !state.hover || was.side !== side || was.row !== row) {
        requestAnimationFrame(drawLines);
      }
      if (row !== null) announce(side, row);
    };
    const pick = (row) => {
      if (side !== "q") return;
      const q = model.get("lines").q0 + row;
      choose({ query: model.get("query") === q ? -1 : q });
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

  function drawLines() {
    const L = parsedLines();
    const header = model.get("header");
    const [kind, layer, head] = sel();
    if (!state.lines || L.kind !== kind || L.layer !== layer) {
      main.replaceChildren(make("div", "vt-wait", "computing…"));
      state.tokensKey = "";
      return false;
    }
    const info = header.kinds[kind];
    const rows = header[info.rows].slice(L.q0, L.q0 + L.nq);
    const cols = header[info.cols].slice(L.k0, L.k0 + L.nk);
    const n = Math.max(rows.length, cols.length);
    const total = n * ROW + 8;
    const tokensKey = `${kind}/${L.q0}/${L.k0}/${L.nq}/${L.nk}`;
    let canvas = main.querySelector("canvas.vt-lines");
    if (!canvas || state.tokensKey !== tokensKey) {
      // the token columns are text; between them a canvas as tall as the box, sticky at its
      // top: scrolling redraws the rows in view, so a long input never makes a huge bitmap
      state.tokensKey = tokensKey;
      const scroll = make("div", "vt-scroll");
      const cols3 = make("div", "vt-cols");
      const mid = make("div", "vt-mid");
      canvas = make("canvas", "vt-lines");
      canvas.setAttribute("role", "img");
      mid.appendChild(canvas);
      cols3.append(tokenList(rows, "q", "queries"), mid, tokenList(cols, "k", "keys"));
      scroll.appendChild(cols3);
      main.replaceChildren(scroll, make("div", "vt-nav"));
      scroll.onscroll = () => requestAnimationFrame(drawLines);
    }
    const scroll = main.querySelector(".vt-scroll");
    const height = Math.min(total, VIEW);
    const dpr = Math.min(window.devicePixelRatio || 1, 2);
    canvas.width = MID * dpr;
    canvas.height = height * dpr;
    canvas.style.width = `${MID}px`;
    canvas.style.height = `${height}px`;
    const off = hidden();
    const shown = [...state.lines.keys()].filter((h) => !off.has(h));
    canvas.setAttribute(
      "aria-label",
      `${info.title}, layer ${layer}: lines from ${fmt(rows.length)} queries to ` +
        `${fmt(cols.length)} keys, one colour per head (heads ${shown.join(", ") || "none"} ` +
        `shown), head ${head} on top; the token lists beside it read each query's strongest key`,
    );
    const ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    const top = Math.min(scroll.scrollTop, total - height);
    const query = model.get("query") - L.q0;
    const hover = state.hover;
    const segs = header.segments || {};
    const [segQ, segK] = [segs[info.rows], segs[info.cols]];
    pairSel.hidden = !(segQ && segK);
    const [wantQ, wantK] = state.pair && segQ && segK ? state.pair.split("-").map(Number) : [];
    const inPair = (i, j) =>
      wantQ === undefined || (segQ[L.q0 + i] === wantQ && segK[L.k0 + j] === wantK);
    const keep = (i, j) =>
      inPair(i, j) &&
      (hover ? (hover.side === "q" ? i === hover.row : j === hover.row) : query < 0 || i === query);
    const y = (r) => 4 + r * ROW + ROW / 2 - top;
    const order = shown.filter((h) => h !== head).concat(shown.includes(head) ? [head] : []);
    for (const h of order) {
      const { i, j, w } = state.lines[h];
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
    for (const [side, chosen] of [["q", query], ["k", -1]]) {
      const list = main.querySelector(`.vt-${side}s`);
      for (const o of list.children) {
        const r = Number(o.dataset.row);
        const on = (hover && hover.side === side && hover.row === r) || r === chosen;
        o.classList.toggle("vt-hot", on);
        if (side === "q") o.setAttribute("aria-selected", String(r === chosen));
      }
    }
    const nav = main.querySelector(".vt-nav");
    const all = shape(kind)[2];
    if (all > L.nq) {
      const step = (d) => () => choose({ start: Math.max(0, Math.min(all - 1, L.q0 + d)) });
      const prev = make("button", "vt-prev", "◀ earlier");
      const next = make("button", "vt-next", "later ▶");
      prev.disabled = L.q0 === 0;
      next.disabled = L.q0 + L.nq >= all;
      prev.onclick = step(-L.nq);
      next.onclick = step(L.nq);
      nav.replaceChildren(prev, next);
    } else {
      nav.replaceChildren();
    }
    return true;
  }

  function drawFocus() {
    const f = model.get("focus");
    const header = model.get("header");
    const [kind, layer, head] = sel();
    if (!f.map || f.kind !== kind || f.layer !== layer || f.head !== head) {
      main.replaceChildren(make("div", "vt-wait", "computing…"));
      return false;
    }
    const info = header.kinds[kind];
    const [, , nQ, nK] = shape(kind);
    const canvas = make("canvas", "vt-focus");
    paint(canvas, bytes(f.map), f.rows, f.cols, colours());
    const side = 340;
    const scale = side / Math.max(f.rows, f.cols);
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
    main.replaceChildren(title, labelled(canvas, f, scale, header, info), readout);
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

  // why the selected query attends to its strongest keys: q . k / sqrt(d_k) by dimension
  function drawQK() {
    const qk = model.get("qk") || {};
    const [kind, layer, head] = sel();
    const q = model.get("query");
    const here = qk.kind === kind && qk.layer === layer && qk.head === head && qk.query === q;
    if (view !== "head" || q < 0 || !here) {
      qkBox.replaceChildren();
      return;
    }
    if (qk.error) {
      qkBox.replaceChildren(make("div", "vt-readout", `query-key view: ${qk.error}`));
      return;
    }
    const header = model.get("header");
    const info = header.kinds[kind];
    const values = new Float32Array(bytes(qk.values).slice().buffer);
    const nParts = qk.parts.length;
    const top = Math.max(1e-9, ...Array.from(values, Math.abs));
    const canvas = make("canvas", "vt-qkmap");
    canvas.width = nParts;
    canvas.height = qk.keys.length;
    const ctx = canvas.getContext("2d");
    const img = ctx.createImageData(nParts, qk.keys.length);
    const { lo } = colours();
    const pos = [178, 24, 43]; // red: the part raises the score
    const neg = [33, 102, 172]; // blue: it lowers it
    values.forEach((v, p) => {
      const a = Math.min(1, Math.abs(v) / top);
      const c = v >= 0 ? pos : neg;
      for (let k = 0; k < 3; k++) img.data[4 * p + k] = lo[k] + a * (c[k] - lo[k]);
      img.data[4 * p + 3] = 255;
    });
    ctx.putImageData(img, 0, 0);
    canvas.style.width = `${Math.max(160, nParts * 6)}px`;
    canvas.style.height = `${qk.keys.length * ROW}px`;
    const rows = qk.keys.map((k, r) => {
      const row = values.slice(r * nParts, (r + 1) * nParts);
      let best = 0;
      row.forEach((v, p) => (Math.abs(v) > Math.abs(row[best]) && qk.parts[p] !== "rest" ? (best = p) : 0));
      return `"${header[info.cols][k]}" (${k}): weight ${qk.weights[r].toFixed(2)}, score ` +
        `${qk.scores[r].toFixed(2)}, largest part ${qk.parts[best]} ${row[best] >= 0 ? "+" : ""}` +
        `${row[best].toFixed(2)}`;
    });
    canvas.setAttribute("role", "img");
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
    qkBox.replaceChildren(title, grid);
  }

  // what a long input shows: the part the model read, and the head view's window of rows
  function noticeText() {
    const header = model.get("header");
    const kind = model.get("kind");
    const info = header.kinds[kind];
    const cut = header.cut || {};
    const parts = [...new Set([info.rows, info.cols])].filter((s) => cut[s]).map((s) => cut[s]);
    const L = model.get("lines");
    const all = shape(kind)[2];
    if (view === "head" && L.kind === kind && all > L.nq) {
      parts.push(`rows ${fmt(L.q0 + 1)}-${fmt(L.q0 + L.nq)} of ${fmt(all)}`);
    }
    return parts.join("; ");
  }

  let said = "";
  function draw() {
    // the grid and the swatches are rebuilt: keep the keyboard's place on the same button
    const had = document.activeElement;
    const place = root.contains(had) && had.matches(".vt-cell, .vt-swatch")
      ? `.${had.classList[0]}[data-head="${had.dataset.head}"]` +
        (had.dataset.layer ? `[data-layer="${had.dataset.layer}"]` : "")
      : null;
    controls();
    const grid = drawGrid();
    if (place) root.querySelector(place)?.focus();
    const big = view === "head" ? drawLines() : drawFocus();
    drawQK();
    const [kind, layer, head] = sel();
    const notes = model.get("header").notes || {};
    note.textContent = Object.values(notes).join(" ");
    notice.textContent = noticeText();
    notice.hidden = !notice.textContent;
    const now = `${kind} ${layer} ${head} ${model.get("query")}`;
    if (big && now !== said) {
      said = now;
      const q = model.get("query");
      const L = model.get("lines");
      if (view === "head" && q >= L.q0 && q < L.q0 + L.nq) announce("q", q - L.q0);
      else say(`${kind}, layer ${layer}, head ${head} selected`);
    }
    delete root.dataset.drawn;
    if (grid && big) {
      const stamp = `${kind} ${layer} ${head}`;
      // stamped once the browser has painted a frame with it (rasterising counts)
      requestAnimationFrame(() =>
        setTimeout(() => {
          if (sel().join(" ") !== stamp) return;
          root.dataset.selected = stamp;
          root.dataset.drawn = String(Date.now());
        }),
      );
    }
  }

  // the frontend's theme changed (JupyterLab, VS Code and marimo mark it on body or html)
  const themed = new MutationObserver(() => {
    state.colours = null;
    state.tokensKey = "";
    draw();
  });
  for (const node of [document.body, document.documentElement]) {
    themed.observe(node, { attributes: true, attributeFilter: ["class", "data-jp-theme-name",
      "data-jp-theme-light", "data-theme", "data-vscode-theme-kind"] }); // prettier-ignore
  }

  const events = ["kind", "layer", "head", "query", "hidden", "grid", "lines", "focus", "header",
    "qk"]; // prettier-ignore
  const names = events.map((name) => `change:${name}`);
  for (const e of names) model.on(e, draw);
  draw();
  return () => {
    themed.disconnect();
    for (const e of names) model.off(e, draw);
  };
}

export default { render };
