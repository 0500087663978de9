// viz-transformer's notebook widgets (anywidget, a plain ES module: no build step, no network).
// The head view (BertViz style: queries left, keys right, a line per weight coloured by head)
// and the model view (every layer x head as a small map, the selected one large) draw what
// Python sends (notebook/payload.py) and share the selection through the traits kind, layer,
// head and query: a click sets them, and Python setting them redraws.

const INK = [8, 48, 107]; // the darkest blue of plotly's "Blues": weight 1
const ROW = 18; // pixels per token in the head view
const TEXT = 150; // pixels for the token labels on each side
const WIDTH = 470;
const VIEW = 560; // pixels of the head view's scroll box (the canvas is never taller)

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

function paint(canvas, cells, rows, cols) {
  canvas.width = cols;
  canvas.height = rows;
  const ctx = canvas.getContext("2d");
  const img = ctx.createImageData(cols, rows);
  for (let p = 0; p < rows * cols; p++) {
    const v = cells[p] / 255;
    img.data[4 * p] = 255 - v * (255 - INK[0]);
    img.data[4 * p + 1] = 255 - v * (255 - INK[1]);
    img.data[4 * p + 2] = 255 - v * (255 - INK[2]);
    img.data[4 * p + 3] = 255;
  }
  ctx.putImageData(img, 0, 0);
}

function rgba(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${alpha.toFixed(2)})`;
}

function render({ model, el }) {
  const view = model.get("view");
  const root = make("div", `vt-root vt-${view}`);
  const bar = make("div", "vt-bar");
  const kindSel = make("select", "vt-kind");
  kindSel.setAttribute("aria-label", "attention kind");
  const layerSel = make("select", "vt-layer");
  layerSel.setAttribute("aria-label", "layer");
  const label = make("span", "vt-label");
  bar.append(kindSel, layerSel, label);
  const heads = make("div", "vt-heads"); // the head view's colour swatches
  const body = make("div", "vt-body");
  const main = make("div", "vt-main");
  const gridBox = make("div", "vt-grid");
  const note = make("div", "vt-note");
  body.append(main, gridBox);
  root.append(bar, heads, body, note);
  el.appendChild(root);

  const state = { hover: null, lines: null, linesKey: "" };
  const sel = () => [model.get("kind"), model.get("layer"), model.get("head")];
  const shape = (kind) => model.get("header").kinds[kind].shape;
  const choose = (changes) => {
    for (const [k, v] of Object.entries(changes)) model.set(k, v);
    model.save_changes();
  };

  function controls() {
    const header = model.get("header");
    const [kind, layer, head] = sel();
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
    heads.replaceChildren(
      ...Array.from({ length: view === "head" ? nHeads : 0 }, (_, h) => {
        const b = make("button", "vt-swatch", `H${h}`);
        b.style.setProperty("--c", header.colours[h % header.colours.length]);
        b.dataset.head = String(h);
        b.setAttribute("aria-pressed", String(h === head));
        b.title = `head ${h}: click to select`;
        b.onclick = () => choose({ head: h });
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
        b.setAttribute("aria-label", `layer ${l} head ${h}`);
        b.title = `layer ${l}, head ${h} (largest weight ${g.scale[l * g.heads + h].toFixed(2)})`;
        const c = make("canvas");
        const at = (l * g.heads + h) * size;
        paint(c, cells.subarray(at, at + size), g.rows, g.cols);
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

  function drawLines() {
    const L = parsedLines();
    const header = model.get("header");
    const [kind, layer, head] = sel();
    if (!state.lines || L.kind !== kind || L.layer !== layer) {
      main.replaceChildren(make("div", "vt-wait", "computing…"));
      return false;
    }
    const info = header.kinds[kind];
    const rows = header[info.rows].slice(L.q0, L.q0 + L.nq);
    const cols = header[info.cols].slice(L.k0, L.k0 + L.nk);
    const n = Math.max(rows.length, cols.length);
    const total = n * ROW + 8;
    let canvas = main.querySelector("canvas.vt-lines");
    if (!canvas) {
      // a canvas as tall as the box, sticky at its top, over a spacer as tall as every row:
      // scrolling redraws the rows in view, so a long input never makes a huge bitmap
      const scroll = make("div", "vt-scroll");
      canvas = make("canvas", "vt-lines");
      scroll.append(canvas, make("div", "vt-space"));
      const nav = make("div", "vt-nav");
      main.replaceChildren(scroll, nav);
      scroll.onscroll = () => requestAnimationFrame(drawLines);
      const rowAt = (e) => {
        const r = canvas.getBoundingClientRect();
        const at = Math.floor((e.clientY - r.top + scroll.scrollTop - 4) / ROW);
        return { side: e.clientX - r.left < WIDTH / 2 ? "q" : "k", row: at };
      };
      canvas.onmousemove = (e) => {
        const hover = rowAt(e);
        if (!state.hover || state.hover.side !== hover.side || state.hover.row !== hover.row) {
          state.hover = hover;
          requestAnimationFrame(drawLines);
        }
      };
      canvas.onmouseleave = () => {
        state.hover = null;
        requestAnimationFrame(drawLines);
      };
      canvas.onclick = (e) => {
        const { side, row } = rowAt(e);
        const now = model.get("lines");
        if (side === "q" && row >= 0 && row < now.nq) {
          const q = now.q0 + row;
          choose({ query: model.get("query") === q ? -1 : q });
        }
      };
    }
    const scroll = canvas.parentElement;
    const height = Math.min(total, VIEW);
    const dpr = Math.min(window.devicePixelRatio || 1, 2);
    scroll.lastChild.style.height = `${total - height}px`;
    canvas.width = WIDTH * dpr;
    canvas.height = height * dpr;
    canvas.style.width = `${WIDTH}px`;
    canvas.style.height = `${height}px`;
    const ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    const top = Math.min(scroll.scrollTop, total - height);
    const query = model.get("query") - L.q0;
    const hover = state.hover;
    const keep = (i, j) =>
      hover ? (hover.side === "q" ? i === hover.row : j === hover.row) : query < 0 || i === query;
    const y = (r) => 4 + r * ROW + ROW / 2 - top;
    const order = [...state.lines.keys()].filter((h) => h !== head).concat([head]);
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
        p.moveTo(TEXT, a);
        p.lineTo(WIDTH - TEXT, b);
      }
      ctx.lineWidth = h === head ? 2 : 1.5;
      paths.forEach((p, level) => {
        if (level === 0) return;
        ctx.strokeStyle = rgba(colour, (level / 10) * fade);
        ctx.stroke(p);
      });
    }
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const label = (tokens, x, align, side, chosen) =>
      tokens.forEach((t, r) => {
        if (y(r) < -ROW || y(r) > height + ROW) return;
        const on = (hover && hover.side === side && hover.row === r) || r === chosen;
        ctx.fillStyle = on ? "#000" : "#333";
        ctx.font = `${on ? "bold " : ""}12px system-ui, sans-serif`;
        ctx.textAlign = align;
        ctx.fillText(String(t).slice(0, 18), x, y(r));
      });
    label(rows, TEXT - 8, "right", "q", query);
    label(cols, WIDTH - TEXT + 8, "left", "k", -1);
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
      const where = `queries ${L.q0}-${L.q0 + L.nq - 1} of ${all}`;
      nav.replaceChildren(prev, make("span", "", where), next);
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
    paint(canvas, bytes(f.map), f.rows, f.cols);
    const side = 340;
    const scale = side / Math.max(f.rows, f.cols);
    canvas.style.width = `${Math.round(f.cols * scale)}px`;
    canvas.style.height = `${Math.round(f.rows * scale)}px`;
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

  function draw() {
    controls();
    const grid = drawGrid();
    const big = view === "head" ? drawLines() : drawFocus();
    const [kind, layer, head] = sel();
    const notes = model.get("header").notes || {};
    note.textContent = Object.values(notes).join(" ");
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

  const events = ["kind", "layer", "head", "query", "grid", "lines", "focus", "header"].map(
    (name) => `change:${name}`,
  );
  for (const e of events) model.on(e, draw);
  draw();
  return () => {
    for (const e of events) model.off(e, draw);
  };
}

export default { render };
