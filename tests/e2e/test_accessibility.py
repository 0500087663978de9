"""WCAG 2.1 AA in a real browser (issue 42), on one server and one browser for the module:

- axe-core (from the npm registry, fetched by ``.ci/run`` into ``.test-parts/``, injected from
  that file; never a CDN) on every page in both modes (1366x768, and presenter mode at
  1024x768) and in a lesson of a class: no critical or serious violation in markup the project
  controls; Streamlit's own are allowed by rule, place and upstream issue (``STREAMLIT_OWN``);
- text contrast measured on the drawn page: captions, selected chips, the sidebar's page links
  and the charts' tick labels, axis titles and bar labels (on their bar or above it) at least
  4.5:1, text fields' edges 3:1; a focus
  ring of at least 3:1 on every control the first Tab stops reach; every chart named, its
  description beside it, no chart toolbar in the Tab order; each page's title names it;
- a student answers a step of each check kind by keyboard alone, and after Next and Check the
  focus and the view move to the new step and to the feedback.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

import viz_transformer as vt
from viz_transformer.testing.chromium import fresh_page

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / ".test-parts" / "axe-core-4.14.1" / "axe.min.js"
PAGES = [
    "",
    "attention_maps",
    "positional_encoding",
    "softmax_saturation",
    "decoder_steps",
    "qkv_walkthrough",
    "what_heads_do",
    "heads_across_corpus",
    "then_and_now",
    "watch_it_learn",
    "compare_models?cmp_kind=cross",
    "lesson",
    "teacher",
    "teacher?class=",
]  # fmt: skip  (the last: a class open, its code and key added)
MODES = {"normal": (1366, 768, False), "presenter": (1024, 768, True)}
TOUR = "paper_tour"
# Streamlit's own markup that axe flags (rule -> where, upstream issue): the sidebar's page list
# puts a named section's heading (a div) in the <ul> and its links' <li> in a div. No issue on
# this markup alone was found upstream; the open accessibility issue that covers page structure:
STREAMLIT_OWN = {
    "list": ('[data-testid="stSidebarNav"]', "https://github.com/streamlit/streamlit/issues/8399"),
    "listitem": ('[data-testid="stSidebarNav"]', "https://github.com/streamlit/streamlit/issues/8399"),
}  # fmt: skip
TEXT_CONTRAST, FOCUS_CONTRAST, TAB_STOPS = 4.5, 3.0, 45

_COLOURS_JS = """
const rgba = (s) => { const m = (s.match(/[\\d.]+/g) || [0, 0, 0, 0]).map(Number);
  return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
const over = (f, b) => [0, 1, 2].map((i) => f[i] * f[3] + b[i] * (1 - f[3])).concat([1]);
const lum = (c) => { const l = c.slice(0, 3).map((v) => { v /= 255;
  return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
const ratio = (a, b) => { const x = lum(a), y = lum(b);
  return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
const backdrop = (el) => { const layers = [];
  for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
    const c = rgba(getComputedStyle(e).backgroundColor); if (c[3] > 0) layers.push(c);
    if (c[3] >= 1) break; }
  return layers.reverse().reduce((b, c) => over(c, b), [255, 255, 255, 1]); };
const opacity = (el) => { let o = 1;
  for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
    o *= Number(getComputedStyle(e).opacity); }
  return o; };
"""
_CONTRAST_JS = (
    "() => {"
    + _COLOURS_JS
    + """
  const seen = (el) => el.getClientRects().length && getComputedStyle(el).visibility !== 'hidden';
  const text = (el, prop) => { const c = rgba(getComputedStyle(el)[prop]); c[3] *= opacity(el);
    const b = backdrop(el); return ratio(over(c, b), b); };
  const out = [];
  const add = (what, sel, prop) => document.querySelectorAll(sel).forEach((el) => {
    if (seen(el) && el.textContent.trim())
      out.push({what, text: el.textContent.trim().slice(0, 40), ratio: text(el, prop)}); });
  add('caption', '[data-testid="stCaptionContainer"]', 'color');
  add('selected chip', '[data-testid="stButtonGroup"] button[aria-checked="true"]', 'color');
  add('page link', '[data-testid="stSidebarNavLink"] [data-testid="stMarkdownContainer"]',
      'color');
  add('chart text', '.js-plotly-plot .main-svg :is(g[class$="tick"], g[class$="title"]) text',
      'fill');
  document.querySelectorAll('.js-plotly-plot .main-svg text.bartext').forEach((t) => {
    if (!seen(t) || !t.textContent.trim()) return;  // a bar's label: on its bar, or above it
    const bar = t.parentElement.querySelector('path'), b = t.getBoundingClientRect();
    const p = bar && bar.getBoundingClientRect(), x = b.left + b.width / 2;
    const y = b.top + b.height / 2, page = backdrop(t.closest('.js-plotly-plot'));
    const on = p && x > p.left && x < p.right && y > p.top && y < p.bottom;
    const back = on ? over(rgba(getComputedStyle(bar).fill), page) : page;
    out.push({what: 'bar label', text: t.textContent.trim().slice(0, 40),
              ratio: ratio(over(rgba(getComputedStyle(t).fill), back), back)});
  });
  document.querySelectorAll('[data-testid="stTextAreaRootElement"], '
    + '[data-testid="stTextInputRootElement"], [data-baseweb="select"]').forEach((el) => {
    if (!seen(el)) return;  // a field's edge against what is behind it (WCAG 1.4.11)
    const edge = rgba(getComputedStyle(el).borderTopColor);
    out.push({what: 'field edge', text: el.innerText.trim().slice(0, 40), minimum: 3,
              ratio: ratio(over(edge, backdrop(el.parentElement)), backdrop(el.parentElement))});
  });
  document.querySelectorAll('label:has(input[role="switch"]:not(:checked))').forEach((el) => {
    const track = el.querySelector(':scope > div');  // a switch that is off, against the page
    if (!seen(el) || !track) return;
    const fill = rgba(getComputedStyle(track).backgroundColor), b = backdrop(el);
    out.push({what: 'switch track', text: el.innerText.trim().slice(0, 40), minimum: 3,
              ratio: ratio(over(fill, b), b)});
  });
  return out; }"""
)
_FOCUS_JS = (
    "() => {"
    + _COLOURS_JS
    + """
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const name = (e.getAttribute('aria-label') || (e.labels && e.labels[0] && e.labels[0].innerText)
    || e.innerText || e.tagName).trim().slice(0, 40);
  const chain = [];
  for (let n = e; n && chain.length < 5; n = n.parentElement) chain.push(n);
  // a visually hidden input (in a clipped box) draws no ring that shows: look above its box
  const hidden = chain.findLastIndex((n) => { const c = getComputedStyle(n);
    return c.clipPath.startsWith('inset(50%') || c.clip === 'rect(0px, 0px, 0px, 0px)'; });
  for (const n of chain.slice(hidden + 1)) {
    const s = getComputedStyle(n);
    if (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2) {
      const behind = parseFloat(s.outlineOffset) < 0 ? n : (n.parentElement || n);
      return {name, ratio: ratio(rgba(s.outlineColor), backdrop(behind))}; } }
  return {name, ratio: 0}; }"""
)


@pytest.fixture(scope="module")
def axe_source(need) -> str:
    """axe-core's script, as ``.ci/run`` fetched it from the npm registry."""
    need("axe")
    return AXE.read_text()


@pytest.fixture(scope="module")
def classroom(
    tmp_path_factory: pytest.TempPathFactory, serve_app
) -> Iterator[tuple[str, str, Callable[[], str]]]:
    """The app on a class store of its own with a class of the built-in lesson, three students
    in it: (URL, code, a new one-time link's token at each call; the Teacher page is checked
    with the class open)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('a11y') / 'classes.sqlite3'}"
    store = vt.classroom(url)
    code, key = store.teacher.create(TOUR)
    for i, name in enumerate(("Ada", "Bo", "Cy")):  # counts on the funnel's bars
        store.students.move(code, store.students.join(code, name), i)
    with serve_app("accessibility", {"VT_DATABASE_URL": url}) as served:
        yield served, code, lambda: store.access.one_time_link(code, key)


def _ready(page: Page, url: str) -> None:
    """Open ``url`` and wait for the page drawn whole: its run through the sidebar (which adds
    the stylesheet; a fresh server first shows a skeleton) ended and every chart drawn."""
    page.goto(url)
    # a Teacher page opened by a one-time link loads itself again without its token
    page.wait_for_function("() => !location.search.includes('once=')")
    page.wait_for_function(
        "() => [...document.querySelectorAll('style')].some((s) => s.textContent.includes("
        "'st-key-vt-about-'))"
    )
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    page.wait_for_function(  # every chart drawn (plotly's first draw comes after the run)
        "() => [...document.querySelectorAll('[data-testid=\"stPlotlyChart\"]')]"
        ".every((c) => c.querySelector('.main-svg'))"
    )
    page.wait_for_timeout(800)
    # and every CSS transition ended (a presenter's sidebar folding away, a field's border
    # taking the theme's colour): measured mid-way, under load, a colour is neither end's
    page.evaluate(
        "() => Promise.all(document.getAnimations().filter((a) => a instanceof CSSTransition)"
        ".map((a) => a.finished.catch(() => null)))"
    )


def _serious(page: Page, axe: str) -> list[str]:
    """The critical and serious axe violations of the page, less Streamlit's own."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(content=axe)
    found = page.evaluate("async () => (await axe.run(document, {iframes: false})).violations")
    problems = []
    for rule in found:
        if rule["impact"] not in ("critical", "serious"):
            continue
        where = STREAMLIT_OWN.get(rule["id"], (None,))[0]
        for node in rule["nodes"]:
            target = node["target"][-1]
            own = where and page.evaluate(
                "([t, w]) => !!document.querySelector(t)?.closest(w)", [target, where]
            )
            if not own:
                problems.append(f"{rule['id']} ({rule['impact']}): {target}: {rule['help']}")
    return problems


def _tab_stops(page: Page, count: int) -> list[dict]:
    page.evaluate(  # start from the page's top
        "() => { const b = document.body; b.tabIndex = -1; b.focus();"
        " b.removeAttribute('tabindex'); }"
    )
    stops = []
    for _ in range(count):
        page.keyboard.press("Tab")
        stop = page.evaluate(_FOCUS_JS)
        if stop:
            stops.append(stop)
    return stops


@pytest.fixture(scope="module", params=list(MODES))
def screen(request: pytest.FixtureRequest, browser: Browser) -> Iterator[tuple[Page, bool]]:
    width, height, presenter = MODES[request.param]
    with fresh_page(browser, width, height, 120_000) as page:
        yield page, presenter


@pytest.mark.parametrize("path", PAGES)
def test_every_page_meets_the_contrast_focus_and_axe_checks(classroom, screen, axe_source, path):
    url, code, once = classroom
    page, presenter = screen
    path += f"{code}&once={once()}" if path.endswith("class=") else ""
    _ready(page, f"{url}/{path}{'&' if '?' in path else '?'}presenter={presenter}")
    problems = _serious(page, axe_source)
    for item in page.evaluate(_CONTRAST_JS):
        if item["ratio"] < item.get("minimum", TEXT_CONTRAST):
            problems.append(f"{item['what']} {item['text']!r} at {item['ratio']:.2f}:1")
    for stop in _tab_stops(page, TAB_STOPS):
        if stop["ratio"] < FOCUS_CONTRAST:
            problems.append(f"focus on {stop['name']!r} at {stop['ratio']:.2f}:1")
    charts = page.locator('[data-testid="stPlotlyChart"]')
    for i in range(charts.count()):
        chart = charts.nth(i)
        name = chart.get_attribute("aria-label")
        if chart.get_attribute("role") != "figure" or not name:
            problems.append(f"chart {i} has no accessible name")
        elif page.locator('[class*="st-key-vt-about-"]').filter(has_text=f"{name}: ").count() == 0:
            problems.append(f"chart {name!r} has no description")
    here = page.locator('[data-testid="stSidebarNavLink"][aria-current="page"]').inner_text()
    if page.title() != f"{here.split(chr(10))[-1]} · viz-transformer":  # WCAG 2.4.2
        problems.append(f"the page's title {page.title()!r} does not name it")
    if page.locator(".modebar-btn").count():
        problems.append("a chart toolbar is in the Tab order")
    assert not problems, "\n".join(problems)


ACTIVE_JS = """() => { const e = document.activeElement; const box = e.getBoundingClientRect();
  return {tag: e.tagName, text: (e.innerText || '').trim().slice(0, 80),
          feedback: !!e.closest('.st-key-vt-focus-feedback'),
          seen: box.top >= 0 && box.bottom <= innerHeight}; }"""
_NAME_JS = """() => { const e = document.activeElement;
  return (e.getAttribute('aria-label') || (e.labels && e.labels[0] && e.labels[0].innerText)
          || e.innerText || '').trim(); }"""


def _tab_to(page: Page, name: str, limit: int = 80) -> None:
    """Press Tab until the focused control's name starts with ``name``."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(_NAME_JS).split("\n")[-1].startswith(name):
            return
    raise AssertionError(f"{limit} Tab stops and no {name!r}")


def _answered(page: Page) -> dict:
    """Wait for the feedback to hold the focus; where the focus is."""
    page.wait_for_function("() => !!document.activeElement.closest('.st-key-vt-focus-feedback')")
    return page.evaluate(ACTIVE_JS)


def _next(page: Page, title: str) -> None:
    """Next by keyboard: the focus and the view move to the new step's heading."""
    _tab_to(page, "Next")
    page.keyboard.press("Enter")
    page.wait_for_function("t => document.activeElement.innerText === t", arg=title)
    assert page.evaluate(ACTIVE_JS)["seen"]


def test_a_student_answers_every_kind_of_check_by_keyboard_alone(classroom, browser, axe_source):
    url, code, _ = classroom
    lesson = vt.load_lesson(TOUR)
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(90_000)
    page.goto(f"{url}/lesson?class={code}")
    page.get_by_label("Your name").wait_for()
    _tab_to(page, "Your name")
    page.keyboard.type("Grace")
    _tab_to(page, "Join")
    page.keyboard.press("Enter")
    page.wait_for_url("**student=*")
    page.get_by_role("heading", name=lesson.steps[0].title).wait_for()
    page.wait_for_selector('[data-testid="stStatusWidget"]', state="detached")
    problems = _serious(page, axe_source)  # a lesson in a class
    assert not problems, "\n".join(problems)
    kinds = {}
    for i, step in enumerate(lesson.steps):
        if step.question is not None:
            kinds.setdefault(step.question.kind, i)
    assert set(kinds) == {"choice", "number", "head", "token", "text"}
    typed = {"number": "0.5", "token": "Eu", "text": "It looks at the verb."}
    for i, step in enumerate(lesson.steps):
        if i > 0:
            _next(page, step.title)
        if kinds.get(step.question.kind if step.question else "") != i:
            continue
        kind = step.question.kind
        if kind == "choice":
            _tab_to(page, step.question.options[0])
            page.keyboard.press("ArrowDown")  # the second option, picked by arrow
            _tab_to(page, "Check")
            page.keyboard.press("Enter")
        elif kind == "head":
            _tab_to(page, "L")  # the first head of the grid
            page.keyboard.press("Space")
        else:
            _tab_to(page, {"number": "Number", "token": "Token", "text": "Your answer"}[kind])
            page.keyboard.type(typed[kind])
            _tab_to(page, "Submit" if kind == "text" else "Check")
            page.keyboard.press("Enter")
        where = _answered(page)
        assert where["seen"] and "Your answer:" in where["text"], (kind, where)
        if len(kinds) == 1:
            break
        kinds.pop(kind)
    context.close()
