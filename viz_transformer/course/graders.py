"""How an answer to each question kind is graded, read from the lesson's model at answer time: the
right answer comes from the trace of the question's sentence (or from the paper's formula), never
stored. ``question_kinds.QUESTION_KINDS`` names each kind's grader; ``grading.grade`` calls it.

A grader takes the question, the answer (stripped, not empty) and ``traces``: a function
``(model name, sentence) -> Trace`` given by the caller, or ``grading_caches.GradingCaches`` (the
app passes its pages' caches, so a sentence is traced once per server and dropped with the pages'
traces when a live model is retrained; ``vt.grade`` traces).
"""

from __future__ import annotations

import math

import numpy as np

from viz_transformer.course.grading_caches import TraceOf, caches_of, traced
from viz_transformer.course.lesson import DEFAULT_TOLERANCE, Grade, Question
from viz_transformer.course.quantities import COURSE_QUANTITIES, course_value
from viz_transformer.records.kinds import head_label, parse_head_label
from viz_transformer.records.lazy import LazyPatterns
from viz_transformer.records.trace import Patterns, Trace

HEAD_SHARE = 0.9  # a head is right when its weight is at least this share of the best head's
NUMBER_FLOOR = 0.005  # a number rounded to two decimals is never wrong for its rounding
MARKS = ("##", "▁", "Ġ")  # subword display marks (WordPiece, SentencePiece, byte BPE)


def patterns_of(tr: Trace, kind: str) -> Patterns:
    """``[layers, heads, q, k]`` patterns of ``kind`` in ``tr``.

    Raises:
        ValueError: the model records no such attention (a kind it lacks), with its reason.
    """
    arr = tr.get(kind)  # type: ignore[arg-type]
    if arr is None:
        why = tr.notes.get(kind, "")
        raise ValueError(
            f"{tr.model_name} has no {kind} attention{f' ({why})' if why else ''}: this question "
            "cannot be graded on it; the lesson asks for a kind its model does not show."
        )
    return arr


def head_weights(tr: Trace, kind: str, layer: int) -> np.ndarray:
    """``[heads, q, k]`` weights of one layer of ``kind`` (lazy patterns computed per head)."""
    return layer_weights(patterns_of(tr, kind), layer)


def layer_weights(arr: Patterns, layer: int) -> np.ndarray:
    """``[heads, q, k]`` of one layer of ``[layers, heads, q, k]`` patterns, lazy or not."""
    return arr.heads(layer) if isinstance(arr, LazyPatterns) else np.asarray(arr[layer])


def head_cells(arr: Patterns, layer: int, q: int, k: int) -> np.ndarray:
    """``[heads]``: each head's weight from row ``q`` to column ``k`` at ``layer``; a lazy trace
    computes that one row of each head, never a whole head."""
    if isinstance(arr, LazyPatterns):
        return np.array([arr.cells(layer, h, [q], [k])[0, 0] for h in range(arr.shape[1])])
    return np.asarray(arr[layer])[:, q, k]


def grade_head(question: Question, answer: str, traces: TraceOf) -> Grade:
    """Right when the head named is at least ``HEAD_SHARE`` of the strongest head's weight from
    row ``query`` to column ``key`` (among the question's ``layers``, if given)."""
    a = question.args
    tr = traces(question.model, a["sentence"])
    kind, q, k = a["attention"], a["query"], a["key"]
    arr = patterns_of(tr, kind)
    n_layers = arr.shape[0]
    layers = list(a.get("layers") or range(n_layers))
    table = {layer: head_cells(arr, layer, q, k) for layer in layers}  # layer -> [heads]
    best_layer = max(table, key=lambda layer: float(table[layer].max()))
    best_head = int(table[best_layer].argmax())
    top = float(table[best_layer][best_head])
    expected = head_label((best_layer, best_head))
    rows, cols = tr.map_labels(kind)  # as the map labels them (a cross row: the word predicted)
    cell = f"row {q} ({rows[q]!r}) to column {k} ({cols[k]!r})"
    try:
        layer, head = parse_head_label(answer)
    except ValueError:
        return Grade(
            False,
            expected,
            f"Could not read {answer!r} as a head: write it like "
            "'L1 H3' (layer 1, head 3, counted from 0).",
            readable=False,
        )
    named = head_label((layer, head))
    n_heads = table[best_layer].shape[0]
    if layer not in table or head >= n_heads:
        where = f"layers {', '.join(map(str, layers))}" if a.get("layers") else f"{n_layers} layers"
        return Grade(
            False,
            expected,
            f"{named} is not among the heads asked about ({where}, heads 0-{n_heads - 1}).",
        )
    weight = float(table[layer][head])
    if weight >= HEAD_SHARE * top:
        best = "the most of any head" if weight == top else f"the strongest head puts {top:.2f}"
        return Grade(True, expected, f"Right: {named} puts {weight:.2f} on {cell}; {best}.")
    hint = "Look for the brightest cell in that row."
    return Grade(
        False,
        expected,
        f"{named} puts only {weight:.2f} on {cell}; another head puts {top:.2f} there. {hint}",
    )


def normalise_token(token: str) -> str:
    """A token as compared: without display marks and surrounding quotes, case folded."""
    for mark in MARKS:
        token = token.replace(mark, "")
    return token.strip().strip("'\"`").strip().casefold()


def grade_token(question: Question, answer: str, traces: TraceOf) -> Grade:
    """Right when the answer is the decoder's input token at ``step``, ignoring case and the
    display marks ``MARKS``."""
    tr = traces(question.model, question.args["sentence"])
    step = question.args["step"]
    expected = tr.tgt_tokens[step]
    if normalise_token(answer) == normalise_token(expected):
        return Grade(True, expected, f"Right: at step {step} the decoder reads {expected!r}.")
    reason = (
        "it starts with the start symbol"
        if step == 0
        else f"the input is the output shifted right: what it wrote at step {step - 1}"
    )
    return Grade(
        False,
        expected,
        f"Not {answer!r}: at step {step} the decoder reads {expected!r} ({reason}).",
    )


def pe_value(position: int, dim: int, d_model: int) -> float:
    """The paper's positional encoding (section 3.5): ``sin(pos / 10000^(2i/d_model))`` at
    dimension ``2i``, ``cos`` of the same at ``2i + 1``."""
    angle = position / 10000.0 ** (2 * (dim // 2) / d_model)
    return math.sin(angle) if dim % 2 == 0 else math.cos(angle)


def number_value(question: Question, traces: TraceOf = traced) -> float:
    """The model's (or the formula's) value of a ``number`` question's quantity."""
    a = question.args["args"]
    if question.args["quantity"] in COURSE_QUANTITIES:
        return course_value(question.model, question.args["quantity"], a, caches_of(traces))
    if question.args["quantity"] == "pe_value":
        return pe_value(a["position"], a["dim"], a["d_model"])
    tr = traces(question.model, a["sentence"])
    row = head_weights(tr, a["attention"], a["layer"])[a["head"], a["query"]].astype(np.float64)
    if question.args["quantity"] == "attention_weight":
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


def grade_number(question: Question, answer: str, traces: TraceOf) -> Grade:
    """Right within ``tolerance`` (relative, default 0.02), and always within
    ``NUMBER_FLOOR`` (an answer rounded to two decimals)."""
    value = number_value(question, traces)
    tolerance = float(question.args.get("tolerance", DEFAULT_TOLERANCE))
    expected = f"{value:.4g}"
    given = parse_number(answer)
    if given is None:
        return Grade(
            False,
            expected,
            f"Could not read {answer!r} as a number: write it like "
            "0.62 (a dot or a comma before the decimals).",
            readable=False,
        )
    off = abs(given - value)
    if off <= max(tolerance * abs(value), NUMBER_FLOOR):
        return Grade(True, expected, f"Right: the model gives {expected}.")
    share = f"{off / abs(value):.0%} off" if value else f"{off:.3g} off"
    way = "too high" if given > value else "too low"
    # the margin that applies: the relative one, or the floor where that is smaller (a value of 0)
    margin = (
        f"within {tolerance:.0%}"
        if tolerance * abs(value) >= NUMBER_FLOOR
        else f"at most {NUMBER_FLOOR:g} apart"
    )
    return Grade(
        False,
        expected,
        f"{answer} is {way}: {share} ({margin} counts); check which "
        "row and column, and how many decimals you read.",
    )


def grade_choice(question: Question, answer: str, traces: TraceOf) -> Grade:
    """Right when the answer is the correct option's text, or its letter (A for the first)."""
    options = [str(o) for o in question.options]
    right = options[question.args["correct"]]
    wanted = " ".join(answer.split()).casefold()
    matches = [i for i, o in enumerate(options) if " ".join(o.split()).casefold() == wanted]
    letter = wanted.rstrip(").").strip()
    if not matches and len(letter) == 1 and "a" <= letter < chr(ord("a") + len(options)):
        matches = [ord(letter) - ord("a")]
    if not matches:
        return Grade(False, right, "Pick one of the options.", readable=False)
    if matches[0] == question.args["correct"]:
        return Grade(True, right, "Right.")
    # a hint, never the right option: a retry after being told would count as right
    return Grade(
        False,
        right,
        "Not this one. Read the step again (its page shows it) and try another option.",
    )


def keep_text(question: Question, answer: str, traces: TraceOf) -> Grade:
    """A free answer: stored, not graded (``correct`` None)."""
    return Grade(None, "", "Saved. A free answer is not graded: compare it with your class.")
