"""What an ablation does to the output even when the greedy text stays the same: each output
token's log-probability with the heads ablated beside the normal one, the top-k heads of an
importance map, and a searched demonstration input where one head changes the output."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from viz_transformer.analysis.ablation import (
    Ablation,
    ablation_hooks,
    check_heads,
    check_mode,
)
from viz_transformer.analysis.capture import trace
from viz_transformer.analysis.heads import head_importance, ticking
from viz_transformer.analysis.stepping import decoding
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.kinds import AttentionKind, Head, KindHead
from viz_transformer.records.progress import OnFraction, StopToken, with_stop
from viz_transformer.text.checks import check_text

DEMO_FILE = "ablation_demo.json"  # in a model's weights folder, written by bench/ablation_demo.py
END = "(end)"  # the label of the end symbol's probability


@dataclass(frozen=True)
class TokenEffect:
    """Per output token (the normal greedy output, end symbol last where the model has one):
    its display string and its log-probability, normally and with the heads ablated, both
    teacher-forced on the same normal output (float64 ``(n,)``)."""

    tokens: tuple[str, ...]
    normal: np.ndarray
    ablated: np.ndarray

    @property
    def drop(self) -> np.ndarray:
        """Nats each token lost to the ablation (negative: it got more likely)."""
        return self.normal - self.ablated

    def most_hurt(self, k: int = 3, at_least: float = 0.05) -> list[int]:
        """Positions of the up to ``k`` tokens that lost most, each more than ``at_least``
        nats, largest loss first."""
        order = np.argsort(-self.drop, kind="stable")[:k]
        return [int(i) for i in order if self.drop[i] > at_least]


def token_effects(
    model: LoadedModel, text: str, heads: Sequence[KindHead], ablation: Ablation = "zero"
) -> TokenEffect:
    """Log p of each token of the normal greedy output, normally and with ``heads`` ablated
    (zeroed or mean ``hook_z``, as ``vt.trace(..., ablate=...)``): the effect of an ablation
    that leaves the greedy text unchanged still shows as lost probability.

    Raises:
        ValueError: a model without output, bad text, mode or heads.
    """
    text, mode = check_text(text), check_mode(ablation)
    checked = _checked(model, heads)
    out_ids = model.reference_ids(text)
    normal = _logprobs(model, text, out_ids)
    fns = ablation_hooks(model, text, checked, mode, None, out_ids)
    with model.hooked(fns):
        ablated = _logprobs(model, text, out_ids)
    fns.check()
    return _effect(model, out_ids, normal, ablated)


@dataclass(frozen=True)
class AblatedOutput:
    """The greedy output text with the heads ablated (``vt.trace(..., ablate=...)``'s
    ``output_text``) and what the ablation did to each token of the normal output."""

    text: str
    effect: TokenEffect


def ablated_output(
    model: LoadedModel,
    text: str,
    heads: Sequence[KindHead],
    ablation: Ablation = "zero",
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
) -> AblatedOutput:
    """The output with ``heads`` ablated and ``token_effects``, in one run that decodes the
    normal output once and builds the hooks once (on smollm2 with mean ablation, 9 passes where
    the two apart took 20).

    Args:
        model: a model with an output; text: the input; heads: ``(kind, layer, head)``.
        ablation: ``"zero"`` or ``"mean"``, as ``vt.trace``.
        progress: called with the fraction done after each greedy step and each whole pass
            (``analysis.stepping``: the two decodes take most of the bar), and from inside the
            model's layers at most every ``heads.TICK_S`` s.
        stop: once set (from any thread), the work ends at its next progress point with
            ``records.progress.Cancelled``, leaving the model without hooks.

    Raises:
        ValueError: a model without output, bad text, mode or heads.
    """
    text, mode = check_text(text), check_mode(ablation)
    checked = _checked(model, heads)
    with ticking(model, with_stop(progress, stop)) as report:
        say = report or (lambda _fraction: None)
        with decoding(model, report, 0.0, 0.35):  # the decodes are most of the time
            out_ids = model.reference_ids(text)
        fns = ablation_hooks(model, text, checked, mode, None, out_ids)  # "mean": one pass
        say(0.45)
        with model.hooked(fns):
            with decoding(model, report, 0.45, 0.8):
                output = model.trace(text).validate().output_text
            ablated = _logprobs(model, text, out_ids)
            say(0.9)
        normal = _logprobs(model, text, out_ids)
        say(1.0)
    fns.check()
    return AblatedOutput(output, _effect(model, out_ids, normal, ablated))


def _checked(model: LoadedModel, heads: Sequence[KindHead]) -> list[KindHead]:
    if model.spec.encoder_only:
        raise ValueError(f"{model.name} produces no output, so an ablation changes none.")
    return check_heads(model, heads)


def _logprobs(model: LoadedModel, text: str, out_ids: Sequence[int]) -> np.ndarray:
    return model.forced_logprobs(text, out_ids)[0].double().cpu().numpy()


def _effect(
    model: LoadedModel, out_ids: Sequence[int], normal: np.ndarray, ablated: np.ndarray
) -> TokenEffect:
    tokens = model.output_tokens(out_ids)
    tokens += (END,) * (len(normal) - len(tokens))  # the end symbol's probability, if scored
    return TokenEffect(tuple(tokens), normal, ablated)


def top_heads(scores: np.ndarray, k: int, kind: AttentionKind) -> tuple[KindHead, ...]:
    """The ``k`` heads of an importance map ``[layers, heads]`` with the largest scores (the
    output loses most without them), largest first."""
    order = np.argsort(-scores, axis=None, kind="stable")[: max(0, k)]
    layers, heads = np.unravel_index(order, scores.shape)
    return tuple((kind, int(la), int(h)) for la, h in zip(layers, heads, strict=True))


@dataclass(frozen=True)
class Demo:
    """An input where ablating ``heads`` (``mode``) changes the greedy output of ``model``."""

    model: str
    text: str
    kind: AttentionKind
    heads: tuple[Head, ...]
    mode: Ablation
    normal: str
    ablated: str


def changes_output(
    model: LoadedModel, text: str, heads: Sequence[KindHead], mode: Ablation
) -> tuple[str, str] | None:
    """``(normal, ablated)`` output texts when ablating ``heads`` changes the greedy output."""
    checked = check_heads(model, heads)
    normal = model.reference_ids(text)
    with model.hooked(ablation_hooks(model, text, checked, mode, None)):
        ablated = model.reference_ids(text)
    if ablated == normal:
        return None
    texts = trace(model, text).output_text, trace(model, text, None, checked, mode).output_text
    return texts if texts[0] != texts[1] else None


def search_demo(
    model: LoadedModel, sentences: Iterable[str], kinds: Sequence[AttentionKind], tries: int = 3
) -> Demo | None:
    """The first sentence (in order) where zero-ablating one head, among the ``tries`` most
    important heads of a kind (``head_importance``), changes the greedy output; None when no
    sentence has one."""
    for text in sentences:
        for kind in kinds:
            for head in top_heads(head_importance(model, text, kind), tries, kind):
                found = changes_output(model, text, [head], "zero")
                if found:
                    return Demo(model.name, text, kind, (head[1:],), "zero", *found)
    return None


def save_demo(demo: Demo, folder: Path) -> Path:
    """Write ``demo`` as ``folder/ablation_demo.json``; returns the path."""
    path = Path(folder) / DEMO_FILE
    data = {**demo.__dict__, "heads": [list(h) for h in demo.heads]}
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path


def demo_for(model: LoadedModel) -> Demo | None:
    """The searched demonstration stored in the model's weights folder, if any."""
    folder = model.spec.path
    path = Path(folder) / DEMO_FILE if isinstance(folder, Path) else None
    if path is None or not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    data["heads"] = tuple(tuple(h) for h in data["heads"])
    return Demo(**data)


def capped_text(model: LoadedModel, text: str, limit: int) -> tuple[str, int]:
    """``text`` cut after the last whole word that keeps it within ``limit`` source tokens, and
    the token count of the whole text: the head experiments hold ``layers x heads x n x n``
    values and run a copy per head, so a long input is capped rather than run whole (1,000
    smollm2 tokens took 8-15 GB).

    Raises:
        ValueError: text the model cannot read.
    """
    total = len(model.source_ids(text)[0])
    if total <= limit:
        return text, total
    words = text.split(" ")
    low, high = 0, len(words)  # the longest prefix of words within the limit, by bisection
    while low < high:
        mid = (low + high + 1) // 2
        if len(model.source_ids(" ".join(words[:mid]))[0]) <= limit:
            low = mid
        else:
            high = mid - 1
    return " ".join(words[: max(1, low)]), total
