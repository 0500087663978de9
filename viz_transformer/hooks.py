"""Hook points (identity modules named from module paths) and the per-thread hook context.

Hook functions live in a ``ContextVar``, not on the modules, so one cached model can serve many
Streamlit sessions in threads: a capture in one thread never sees another thread's hooks, and
leaving the ``hooks()`` block (normally or by an exception) removes everything it added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import nn

HookFn = Callable[[torch.Tensor, str], "torch.Tensor | None"]

_ACTIVE: ContextVar[Mapping[str, tuple[HookFn, ...]] | None] = ContextVar("vt_hooks", default=None)


class HookPoint(nn.Module):
    """Identity module where activations can be read or replaced (TransformerLens style).

    Its ``name`` is the module path (``decoder.layers.1.cross_attn.hook_pattern``), set by
    ``name_hook_points``; nobody types it by hand.
    """

    def __init__(self) -> None:
        super().__init__()
        self.name = ""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        active = _ACTIVE.get()
        if not active:
            return x
        for fn in active.get(self.name, ()):
            out = fn(x, self.name)
            if out is not None:
                x = out
        return x


def name_hook_points(model: nn.Module) -> dict[str, HookPoint]:
    """Name every ``HookPoint`` after its path in ``model.named_modules()`` and return them."""
    points = {}
    for path, module in model.named_modules():
        if isinstance(module, HookPoint):
            module.name = path
            points[path] = module
    return points


def active_hook_names() -> list[str]:
    """Names with hook functions active in this thread (empty outside a ``hooks()`` block)."""
    return sorted((_ACTIVE.get() or {}).keys())


@contextmanager
def hooks(model: nn.Module, fwd_hooks: Mapping[str, HookFn | list[HookFn]]) -> Iterator[None]:
    """Run hook functions at named hook points for the duration of the block, in this thread only.

    Args:
        model: a module whose hook points were named by ``name_hook_points``.
        fwd_hooks: hook-point name -> function ``fn(tensor, name)``; returning a tensor replaces
            the activation (ablation), returning ``None`` only reads it.

    Raises:
        ValueError: a name that is not a hook point of ``model``; the message lists close names.
    """
    known = {p for p, m in model.named_modules() if isinstance(m, HookPoint)}
    unknown = [n for n in fwd_hooks if n not in known]
    if unknown:
        raise ValueError(
            f"unknown hook points {unknown}; this model has {len(known)}, e.g. {sorted(known)[:4]}."
        )
    merged: dict[str, tuple[HookFn, ...]] = dict(_ACTIVE.get() or {})
    for name, fns in fwd_hooks.items():
        fns = tuple(fns) if isinstance(fns, list) else (fns,)
        merged[name] = merged.get(name, ()) + fns
    token = _ACTIVE.set(merged)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
