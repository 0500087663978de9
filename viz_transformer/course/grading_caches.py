"""Where grading reads what the lesson's model computes: ``GradingCaches``, given by the caller as
the class store is given traces. Its traces, and the work the What heads do page also does (every
head ablated, the head roles, the logit lens), come from the caller's caches: the app passes its
pages' (``ui/head_caches.grading_caches``), so a class and the pages compute each once. By
default each is computed here and kept in the course's own small cache (``memo``), as the other
course quantities are (decoding, the walkthrough's capture).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from viz_transformer.analysis.capture import trace
from viz_transformer.analysis.heads import head_importance
from viz_transformer.analysis.lens import Lens, logit_lens
from viz_transformer.analysis.roles import head_roles
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.registry import load_model
from viz_transformer.records.bounded import BoundedCache
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.trace import Trace

T = TypeVar("T")
TraceOf = Callable[[str, str], Trace]  # (model name, sentence) -> its trace
CACHE_ENTRIES = 32
# (model name, id(model), *key) -> (model, value): the course's own results
_KEPT: BoundedCache[tuple[Hashable, ...], tuple[LoadedModel, Any]] = BoundedCache(CACHE_ENTRIES)


def memo(model: LoadedModel, key: tuple[Hashable, ...], make: Callable[[], T]) -> T:
    """``make()`` once per model object and ``key`` (a class's answers come at once), kept in the
    course's own cache. An entry holds its model, so while it is cached the model's ``id`` names
    no other model (a live model retrained under the same name is a new object; without the
    hold, it could get the old one's id and its stale values)."""
    return _KEPT.get_or_make((model.name, id(model), *key), lambda: (model, make()))[1]


def traced(model_name: str, sentence: str) -> Trace:
    """``vt.trace(vt.load_model(model_name), sentence)``: a fresh trace, cached nowhere.

    Raises:
        ValueError: an unknown model or a sentence the model cannot read.
    """
    return trace(load_model(model_name), sentence)


def own_importance(model: LoadedModel, sentence: str, kind: AttentionKind, mode: str) -> np.ndarray:
    """``vt.head_importance``'s ``[layers, heads]`` nats lost, kept in the course's cache."""
    key = ("importance", sentence, kind, mode)
    return memo(model, key, lambda: head_importance(model, sentence, kind, ablation=mode))


def own_roles(model: LoadedModel, sentence: str, kind: AttentionKind) -> Mapping[str, np.ndarray]:
    """``vt.head_roles``'s grid per role, kept in the course's cache."""
    return memo(model, ("roles", sentence, kind), lambda: head_roles(model, kind, sentence))


def own_lens(model: LoadedModel, sentence: str) -> Lens:
    """``vt.logit_lens``, kept in the course's cache."""
    return memo(model, ("lens", sentence), lambda: logit_lens(model, sentence))


@dataclass(frozen=True)
class GradingCaches:
    """What grading reads, from the caller's caches; also a ``TraceOf`` (calling it traces), so
    it goes where traces go (``vt.grade``, ``vt.classroom``).

    Attributes:
        trace: ``(model name, sentence) -> Trace``.
        importance: ``(model, sentence, kind, mode) -> [layers, heads]`` nats lost by ablating
            each head alone (``vt.head_importance``).
        roles: ``(model, sentence, kind) -> {role: [layers, heads]}`` (``vt.head_roles``).
        lens: ``(model, sentence) -> Lens`` (``vt.logit_lens``).
    """

    trace: TraceOf = traced
    importance: Callable[[LoadedModel, str, AttentionKind, str], np.ndarray] = own_importance
    roles: Callable[[LoadedModel, str, AttentionKind], Mapping[str, np.ndarray]] = own_roles
    lens: Callable[[LoadedModel, str], Lens] = own_lens

    def __call__(self, model_name: str, sentence: str) -> Trace:
        return self.trace(model_name, sentence)


def caches_of(traces: TraceOf) -> GradingCaches:
    """``traces`` itself when it is ``GradingCaches``, else caches that read its traces and compute
    the rest into the course's cache."""
    return traces if isinstance(traces, GradingCaches) else GradingCaches(trace=traces)
