"""The course's ``number`` quantities beyond one cell of a map (docs/lessons.md): the model's own
position table or rotary angles, a head with and without 1/sqrt(d_k), decoding steps and beams,
ablation, head roles, the logit lens and a score taken apart. Each is read from the library on
the lesson's model when a student answers, never stored; ``COURSE_QUANTITIES`` registers them
with the grader (``graders.number_value``) and the validator (``question_kinds``,
``validation``), which import it.

A computation a class repeats runs once per model and input: an ablation of every head, the head
roles and the logit lens come from the caller's ``GradingCaches`` (the app: its pages' caches),
a beam search and the walkthrough's capture from the course's own cache
(``grading_caches.memo``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # the computations import the library (PyTorch) when a value is asked for:
    # a lesson file's shape, checked against COURSE_QUANTITIES, reads without them
    from viz_transformer.analysis import decoding
    from viz_transformer.course.grading_caches import GradingCaches
    from viz_transformer.models.base import LoadedModel

Args = Mapping[str, Any]
MAX_DECODE = 40  # the decoder page's default "Most output tokens"
SCALES = ("with", "without")  # the softmax page's two maps: with 1/sqrt(d_k) and without
STATS = ("entropy", "max_weight", "saturated")  # its table: mean entropy (nats), ...
MODES = ("zero", "mean")  # ablation modes (What heads do)


def _one_of(args: Args, field: str, allowed: tuple[str, ...]) -> str:
    if args[field] not in allowed:
        raise ValueError(f"{field!r} must be one of {', '.join(allowed)} (got {args[field]!r})")
    return args[field]


def _index(values: Any, i: int, what: str) -> Any:
    if not 0 <= i < len(values):
        raise ValueError(f"{what} {i} does not exist: there are {len(values)} (counted from 0)")
    return values[i]


def _positions(model: LoadedModel) -> np.ndarray:
    from viz_transformer.analysis import positional

    table = positional.input_vectors(model).positions
    if table is None:
        raise ValueError(f"{model.name} adds no position table to its embeddings")
    return table


def position_value(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """The model's own position vector at ``position``, dimension ``dim`` (section 3.5), in the
    layout the model stores it."""
    row = _index(_positions(model), a["position"], "position")
    return float(_index(row, a["dim"], "dimension"))


def position_dot(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """``PE(position) . PE(other)`` of the model's table: for the sinusoid it depends only on
    ``other - position`` (each (sin, cos) pair turned by the offset)."""
    table = _positions(model)
    first, second = _index(table, a["position"], "position"), _index(table, a["other"], "position")
    return float(np.dot(first.astype(np.float64), second.astype(np.float64)))


def position_norm(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """The norm of the model's position vector at ``position`` (sqrt(d_model / 2) for the
    paper's sinusoid)."""
    row = _index(_positions(model), a["position"], "position")
    return float(np.linalg.norm(row.astype(np.float64)))


def rotary_angle(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """The angle (radians, wrapped into [-pi, pi]) by which a rotary model turns the (q, k)
    ``pair`` at ``position``: position x theta_i, theta_i = base^(-2i/d_head) (the positional
    page's "Rotation of each (q, k) pair" map)."""
    from viz_transformer.analysis import rope

    tables = model.rotary_tables(a["position"] + 1)
    if tables is None:
        raise ValueError(f"{model.name} has no rotary positions to read")
    row = _index(rope.pair_angles(*tables), a["position"], "position")
    return float(_index(row, a["pair"], "pair"))


def _pattern_pair(model: LoadedModel, a: Args, src: GradingCaches) -> tuple[np.ndarray, np.ndarray]:
    """One head's pattern with and without the scale (the softmax page's section 4)."""
    from viz_transformer.analysis import softmax
    from viz_transformer.records.lazy import LazyPatterns

    tr = src.trace(model.name, a["sentence"])
    patterns = tr.get(a["attention"])
    if patterns is None:
        raise ValueError(f"{model.name} has no {a['attention']} attention")
    layer = _index(range(len(patterns)), a["layer"], "layer")
    heads = patterns.heads(layer) if isinstance(patterns, LazyPatterns) else patterns[layer]
    p = np.asarray(_index(heads, a["head"], "head"))
    return softmax.with_and_without_scale(p, model.head_scale())


def saturation(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """``stat`` (mean row entropy in nats, mean max weight, or the share of rows over 0.99) of
    one head ``with`` or ``without`` 1/sqrt(d_k), as the softmax page's table gives it."""
    from viz_transformer.analysis import softmax

    scaled, unscaled = _pattern_pair(model, a, src)
    pattern = scaled if _one_of(a, "scale", SCALES) == "with" else unscaled
    return softmax.pattern_stats(pattern)[_one_of(a, "stat", STATS)]


def unscaled_weight(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """One cell of the head's pattern without 1/sqrt(d_k) (the softmax page's right map)."""
    unscaled = _pattern_pair(model, a, src)[1]
    return float(unscaled[a["query"], a["key"]])


def _decoding(model: LoadedModel, a: Args) -> decoding.Decoding:
    from viz_transformer.analysis import decoding
    from viz_transformer.course.grading_caches import memo

    if not 1 <= a["beam"] <= decoding.MAX_BEAM:
        raise ValueError(f"'beam' must be 1 (greedy) to {decoding.MAX_BEAM}")
    key = ("decode", a["sentence"], a["beam"])
    make = lambda: decoding.decode_steps(model, a["sentence"], MAX_DECODE, a["beam"], 10)  # noqa: E731
    return memo(model, key, make)


def next_token_prob(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """The probability of the ``rank``-th most likely next token (0: the top one) at decoding
    ``step``, with beam width ``beam`` (1: greedy), as the decoder page's bars give it."""
    step = _index(_decoding(model, a).steps, a["step"], "step")
    return float(_index(step.top_probs, a["rank"], "rank"))


def beam_log_prob(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """The log-probability of the ``rank``-th live beam (0: the best) when decoding ``step``
    starts, with beam width ``beam``, as the decoder page's beams chart gives it."""
    step = _index(_decoding(model, a).steps, a["step"], "step")
    return float(_index(step.beams, a["rank"], "beam").log_prob)


def importance(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """How many nats the output's log-probability drops when the head alone is ablated
    (``vt.head_importance``, What heads do: "Which heads matter")."""
    mode = _one_of(a, "mode", MODES)
    grid = src.importance(model, a["sentence"], a["attention"], mode)
    return float(_index(_index(grid, a["layer"], "layer"), a["head"], "head"))


def role_score(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """One head's score for ``role`` (``vt.head_roles``: previous, self, first, duplicate,
    induction, aligning), as the What heads do page's role maps give it."""
    from viz_transformer.analysis.roles import ROLES

    scores = src.roles(model, a["sentence"], a["attention"])
    role = _one_of(a, "role", tuple(r for r in ROLES if r in scores))
    return float(_index(_index(scores[role], a["layer"], "layer"), a["head"], "head"))


def lens_probability(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """The logit lens: the probability of the top next token after decoder ``layer`` at decoder
    ``position`` (``vt.logit_lens``)."""
    lens = src.lens(model, a["sentence"])
    row = _index(lens.probs, a["layer"], "layer")
    return float(_index(row, a["position"], "position"))


def _capture(model: LoadedModel, a: Args) -> Any:
    from viz_transformer.analysis.walkthrough import capture
    from viz_transformer.course.grading_caches import memo

    key = ("capture", a["sentence"], a["attention"])
    return memo(model, key, lambda: capture(model, a["sentence"], a["attention"]))


def attention_score(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """The score q . k / sqrt(d_k) of ``query`` on ``key`` before the softmax (the Q, K, V
    walkthrough's "Why this head looks there" map)."""
    from viz_transformer.analysis.why import head_scores  # pandas: loaded on first use

    scores = head_scores(_capture(model, a), a["layer"], a["head"])
    value = float(_index(_index(scores, a["query"], "query"), a["key"], "key"))
    if not np.isfinite(value):
        raise ValueError(f"key {a['key']} comes after query {a['query']}: the mask hides it")
    return value


def score_part(model: LoadedModel, a: Args, src: GradingCaches) -> float:
    """One bar of a score taken apart: ``split`` (dimension, input, component) and its ``part``
    (``d3``, ``position.content``, ...), as ``vt.score_parts`` names them."""
    from viz_transformer.analysis.why import SPLITS, split_score  # pandas: on first use

    split = _one_of(a, "split", SPLITS)
    cap = _capture(model, a)
    parts = split_score(cap, a["layer"], a["head"], a["query"], a["key"], split)  # type: ignore[arg-type]
    found = parts.loc[parts["part"] == a["part"], "value"]
    if found.empty:
        names = ", ".join(str(p) for p in parts["part"] if p != "rest")
        raise ValueError(f"no part {a['part']!r} in the {split} split; its parts: {names}")
    return float(found.iloc[0])


@dataclass(frozen=True)
class Quantity:
    """A course quantity: its args (all required) and how the model gives its value."""

    fields: tuple[str, ...]
    value: Callable[[LoadedModel, Args, GradingCaches], float]


_HEAD = ("sentence", "attention", "layer", "head")
COURSE_QUANTITIES: dict[str, Quantity] = {
    "position_value": Quantity(("position", "dim"), position_value),
    "position_dot": Quantity(("position", "other"), position_dot),
    "position_norm": Quantity(("position",), position_norm),
    "rotary_angle": Quantity(("position", "pair"), rotary_angle),
    "saturation": Quantity((*_HEAD, "scale", "stat"), saturation),
    "unscaled_weight": Quantity((*_HEAD, "query", "key"), unscaled_weight),
    "next_token_prob": Quantity(("sentence", "beam", "step", "rank"), next_token_prob),
    "beam_log_prob": Quantity(("sentence", "beam", "step", "rank"), beam_log_prob),
    "head_importance": Quantity((*_HEAD, "mode"), importance),
    "role_score": Quantity((*_HEAD, "role"), role_score),
    "lens_probability": Quantity(("sentence", "layer", "position"), lens_probability),
    "attention_score": Quantity((*_HEAD, "query", "key"), attention_score),
    "score_part": Quantity((*_HEAD, "query", "key", "split", "part"), score_part),
}
# fields the lesson files' own checks do not type (they type layer, head, query, key, ...)
WHOLE = ("other", "rank", "beam", "pair")
WORDS = ("scale", "stat", "mode", "role", "split", "part")


def course_value(
    model_name: str, quantity: str, args: Args, caches: GradingCaches | None = None
) -> float:
    """The value of a course ``quantity`` on the model named ``model_name``, read from
    ``caches`` (by default, computed into the course's own cache).

    Raises:
        ValueError: args the model cannot give a value for (an index it lacks, an unknown
            role or split part), with what it has.
    """
    from viz_transformer.course.grading_caches import GradingCaches
    from viz_transformer.models.registry import load_model

    return COURSE_QUANTITIES[quantity].value(
        load_model(model_name), args, caches or GradingCaches()
    )


def arg_problems(quantity: str, args: Args) -> list[tuple[str, str]]:
    """(field, what is wrong) for each arg of a course quantity whose type is wrong (none for
    another quantity); the model-dependent ranges are left to ``course_value``."""
    if quantity not in COURSE_QUANTITIES:
        return []
    found = []
    for field in COURSE_QUANTITIES[quantity].fields:
        value = args.get(field)
        if field in WHOLE and (type(value) is not int or value < 0) and value is not None:
            found.append((field, f"{field!r} must be a whole number from 0 (got {value!r})"))
        elif field in WORDS and value is not None and not (isinstance(value, str) and value):
            found.append((field, f"{field!r} must be non-empty text (got {value!r})"))
    return found
