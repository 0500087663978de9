"""Grading an answer against the lesson's model, at answer time (``vt.grade``): the right answer
is read from ``vt.trace`` of the check's sentence, or from the paper's formula, never stored.

Traces are cached per (model, sentence), so a class of students grading the same step costs one
forward pass; a cached trace is shared read-only.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np

from viz_transformer.analysis.capture import trace
from viz_transformer.analysis.lessons.quantities import COURSE_QUANTITIES, course_value
from viz_transformer.analysis.lessons.records import DEFAULT_TOLERANCE, Check, Grade, Lesson
from viz_transformer.models.registry import load_model
from viz_transformer.records.kinds import head_label, parse_head_label
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.trace import Patterns, Trace

CACHE_ENTRIES = 64  # traces kept: a lesson has a few sentences, a server a few lessons
HEAD_SHARE = 0.9  # a head is right when its weight is at least this share of the best head's
NUMBER_FLOOR = 0.005  # a number rounded to two decimals is never wrong for its rounding
_CACHE: OrderedDict[tuple[str, int, str], Trace] = OrderedDict()
_LOCK = threading.Lock()
_KEY_LOCKS: dict[tuple[str, int, str], threading.Lock] = {}


def lesson_trace(model_name: str, sentence: str) -> Trace:
    """``vt.trace(load_model(model_name), sentence)``, computed once per model and sentence even
    when many threads ask at once (the others wait for the first).

    Raises:
        ValueError: an unknown model or a sentence the model cannot read.
    """
    model = load_model(model_name)
    key = (model_name, id(model), sentence)  # a retrained in-memory model is a new object
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with lock:
        with _LOCK:
            if key in _CACHE:
                return _CACHE[key]
        tr = trace(model, sentence)
        with _LOCK:
            _CACHE[key] = tr
            _KEY_LOCKS.pop(key, None)
            while len(_CACHE) > CACHE_ENTRIES:
                _CACHE.popitem(last=False)
    return tr


def check_sentence(check: Check) -> str | None:
    """The sentence a check is graded on (None for ``choice``, ``text`` and ``pe_value``)."""
    if check.kind in ("head", "token"):
        return check.args["sentence"]
    return check.args["args"].get("sentence") if check.kind == "number" else None


def warm_traces(lesson: Lesson, keep_going: Callable[[], bool] = lambda: True) -> None:
    """Trace every sentence the lesson's checks are graded on, so the first answers to each
    step wait for no forward pass (a server calls it in the background when it opens a class);
    a sentence the model cannot read is left for ``validate_lesson`` to report. Stops before the
    next sentence once ``keep_going()`` is False."""
    sentences = {check_sentence(s.check) for s in lesson.steps if s.check is not None}
    for sentence in sorted(s for s in sentences if s is not None):
        if not keep_going():
            return
        try:
            lesson_trace(lesson.model, sentence)
        except (ValueError, RuntimeError):
            continue


def head_weights(tr: Trace, kind: str, layer: int) -> np.ndarray:
    """``[heads, q, k]`` weights of one layer of ``kind`` (lazy patterns computed per head)."""
    arr = tr.get(kind)  # type: ignore[arg-type]
    if arr is None:
        raise ValueError(f"{tr.model_name} has no {kind} attention ({tr.notes.get(kind, '')}).")
    return layer_weights(arr, layer)


def layer_weights(arr: Patterns, layer: int) -> np.ndarray:
    """``[heads, q, k]`` of one layer of ``[layers, heads, q, k]`` patterns, lazy or not."""
    return arr.heads(layer) if isinstance(arr, LazyPatterns) else np.asarray(arr[layer])


def grade(check: Check, answer: str) -> Grade:
    """Grade ``answer`` (a string as the student typed it) against the lesson's model.

    ``head``: "L1 H3" (also "l1h3", "L1, H3", "layer 1 head 3", "1 3"); right when that head's
    weight from row ``query`` to column ``key`` is at least 0.9 x the largest over the heads of
    that kind (of ``layers``, if given). ``token``: the decoder's input token at ``step``,
    ignoring case and the marks ``##`` and ``▁``. ``number``: within ``tolerance`` (relative,
    default 0.02; and at most 0.005 apart always counts, for answers rounded to two decimals).
    ``choice``: an option's text (or its letter, A for the first). ``text``: stored, ``correct``
    None.

    Raises:
        ValueError: a check its model cannot compute (``vt.validate_lesson`` reports these first).
    """
    answer = str(answer).strip()
    if check.kind == "text":
        if not answer:
            return Grade(None, "", "Type an answer first.", readable=False)
        return Grade(None, "", "Saved. A free answer is not graded: compare it with your class.")
    if not answer:
        return Grade(False, _expected(check), "Type an answer first.", readable=False)
    grader = {"head": _grade_head, "token": _grade_token, "number": _grade_number,
              "choice": _grade_choice}[check.kind]  # fmt: skip
    return grader(check, answer)


def _expected(check: Check) -> str:
    return grade(check, "?").expected if check.kind != "text" else ""


def _grade_head(check: Check, answer: str) -> Grade:
    a = check.args
    tr = lesson_trace(check.model, a["sentence"])
    kind, q, k = a["attention"], a["query"], a["key"]
    n_layers = len(tr.get(kind))  # type: ignore[arg-type]
    layers = list(a.get("layers") or range(n_layers))
    table = {layer: head_weights(tr, kind, layer)[:, q, k] for layer in layers}  # layer -> [heads]
    best_layer = max(table, key=lambda layer: float(table[layer].max()))
    best_head = int(table[best_layer].argmax())
    top = float(table[best_layer][best_head])
    expected = head_label((best_layer, best_head))
    rows, cols = tr.tokens_for(kind)
    cell = f"row {q} ({rows[q]!r}) to column {k} ({cols[k]!r})"
    try:
        layer, head = parse_head_label(answer)
    except ValueError:
        return Grade(False, expected, f"Could not read {answer!r} as a head: write it like "
                     "'L1 H3' (layer 1, head 3, counted from 0).", readable=False)  # fmt: skip
    named = head_label((layer, head))
    n_heads = table[best_layer].shape[0]
    if layer not in table or head >= n_heads:
        where = f"layers {', '.join(map(str, layers))}" if a.get("layers") else f"{n_layers} layers"
        return Grade(False, expected, f"{named} is not among the heads asked about "
                     f"({where}, heads 0-{n_heads - 1}).")  # fmt: skip
    weight = float(table[layer][head])
    if weight >= HEAD_SHARE * top:
        best = "the most of any head" if weight == top else f"the strongest head puts {top:.2f}"
        return Grade(True, expected, f"Right: {named} puts {weight:.2f} on {cell}; {best}.")
    hint = "Look for the brightest cell in that row."
    return Grade(False, expected, f"{named} puts only {weight:.2f} on {cell}; another "
                 f"head puts {top:.2f} there. {hint}")  # fmt: skip


MARKS = ("##", "▁", "Ġ")  # subword display marks (WordPiece, SentencePiece, byte BPE)


def normalise_token(token: str) -> str:
    """A token as compared: without display marks and surrounding quotes, case folded."""
    for mark in MARKS:
        token = token.replace(mark, "")
    return token.strip().strip("'\"`").strip().casefold()


def _grade_token(check: Check, answer: str) -> Grade:
    tr = lesson_trace(check.model, check.args["sentence"])
    step = check.args["step"]
    expected = tr.tgt_tokens[step]
    if normalise_token(answer) == normalise_token(expected):
        return Grade(True, expected, f"Right: at step {step} the decoder reads {expected!r}.")
    reason = (
        "it starts with the start symbol"
        if step == 0
        else f"the input is the output shifted right: what it wrote at step {step - 1}"
    )
    return Grade(False, expected, f"Not {answer!r}: at step {step} the decoder reads "
                 f"{expected!r} ({reason}).")  # fmt: skip


def pe_value(position: int, dim: int, d_model: int) -> float:
    """The paper's positional encoding (section 3.5): ``sin(pos / 10000^(2i/d_model))`` at
    dimension ``2i``, ``cos`` of the same at ``2i + 1``."""
    angle = position / 10000.0 ** (2 * (dim // 2) / d_model)
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


def number_value(check: Check) -> float:
    """The model's (or the formula's) value of a ``number`` check's quantity."""
    a = check.args["args"]
    if check.args["quantity"] in COURSE_QUANTITIES:
        return course_value(check.model, check.args["quantity"], a)
    if check.args["quantity"] == "pe_value":
        return pe_value(a["position"], a["dim"], a["d_model"])
    tr = lesson_trace(check.model, a["sentence"])
    row = head_weights(tr, a["attention"], a["layer"])[a["head"], a["query"]].astype(np.float64)
    if check.args["quantity"] == "attention_weight":
        return float(row[a["key"]])
    p = row[row > 0]
    return float(-(p * np.log2(p)).sum())  # row entropy in bits


def parse_number(answer: str) -> float | None:
    """A number as typed: "0.62", "0,62", ".62", "62%", "1e-3", "−0.5"; None otherwise."""
    text = answer.strip().replace("−", "-").replace(" ", "")
    scale = 0.01 if text.endswith("%") else 1.0
    text = text.rstrip("%")
    if text.count(",") == 1 and "." not in text:
        text = text.replace(",", ".")
    try:
        value = float(text) * scale
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _grade_number(check: Check, answer: str) -> Grade:
    value = number_value(check)
    tolerance = float(check.args.get("tolerance", DEFAULT_TOLERANCE))
    expected = f"{value:.4g}"
    given = parse_number(answer)
    if given is None:
        return Grade(False, expected, f"Could not read {answer!r} as a number: write it like "
                     "0.62 (a dot or a comma before the decimals).", readable=False)  # fmt: skip
    off = abs(given - value)
    if off <= max(tolerance * abs(value), NUMBER_FLOOR):
        return Grade(True, expected, f"Right: the model gives {expected}.")
    share = f"{off / abs(value):.0%} off" if value else f"{off:.3g} off"
    way = "too high" if given > value else "too low"
    return Grade(False, expected, f"{answer} is {way}: {share} (within {tolerance:.0%} counts); "
                 "check which row and column, and how many decimals you read.")  # fmt: skip


def _grade_choice(check: Check, answer: str) -> Grade:
    options = [str(o) for o in check.options]
    right = options[check.args["correct"]]
    wanted = " ".join(answer.split()).casefold()
    matches = [i for i, o in enumerate(options) if " ".join(o.split()).casefold() == wanted]
    letter = wanted.rstrip(").").strip()
    if not matches and len(letter) == 1 and "a" <= letter < chr(ord("a") + len(options)):
        matches = [ord(letter) - ord("a")]
    if not matches:
        return Grade(False, right, "Pick one of the options.", readable=False)
    if matches[0] == check.args["correct"]:
        return Grade(True, right, "Right.")
    # a hint, never the right option: a retry after being told would count as right
    return Grade(False, right, "Not this one. Read the step again (its page shows it) and try "
                 "another option.")  # fmt: skip
