"""Every attention call of a Hugging Face model's pass, in call order: a module run twice is two
calls (ALBERT shares one module across layers, HRM runs its modules in cycles, DiffLlama calls
attention twice per layer). What the trace pass and the step-by-step decoder record."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from transformers import PreTrainedModel

from viz_transformer.models.hf.call_record import CallRecord
from viz_transformer.networks.hooks import hooks, point_name
from viz_transformer.records.kinds import AttentionKind


def pattern_bases(pattern_names: list[str]) -> list[str]:
    """The attention modules' paths of their ``hook_pattern`` names."""
    return [n.removesuffix(".hook_pattern") for n in pattern_names]


@contextlib.contextmanager
def in_call_order(
    module: PreTrainedModel, names: list[str], select: Callable[[Any], Any] = lambda x: x
) -> Iterator[list[tuple[str, Any]]]:
    """Record what reaches the hook points ``names`` (``*.hook_pattern`` or ``*.hook_call``),
    one entry per call, in the order the calls ran: (module path, ``select`` of what it
    passed)."""
    seen: list[tuple[str, Any]] = []

    def record(x: torch.Tensor | CallRecord, name: str) -> None:
        seen.append((name.rsplit(".", 1)[0], select(x)))

    with hooks(module, dict.fromkeys(names, record)):
        yield seen


def call_names(names: dict[AttentionKind, list[str]]) -> list[str]:
    """The ``hook_call`` points of every attention module in ``names``."""
    return [point_name(b, "hook_call") for ns in names.values() for b in pattern_bases(ns)]
