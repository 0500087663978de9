"""Hook points (identity modules named from module paths) and the per-thread hook context.

Hook functions live in a ``ContextVar``, not on the modules, so one cached model can serve many
Streamlit sessions in threads: a capture in one thread never sees another thread's hooks, and
leaving the ``hooks()`` block (normally or by an exception) removes everything it added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
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
        return dispatch(self.name, x)


def dispatch(name: str, x: torch.Tensor) -> torch.Tensor:
    """Run this thread's hook functions for ``name`` on ``x``; the identity when there are none.

    ``HookPoint`` calls it, and so do the permanent forward hooks that name the attention modules
    of models we do not write ourselves (Hugging Face, Bergamot).
    """
    active = _ACTIVE.get()
    if not active:
        return x
    for fn in active.get(name, ()):
        out = fn(x, name)
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


def hook_names(model: nn.Module) -> frozenset[str]:
    """Every hook point of ``model``: its ``HookPoint`` modules and any names it declares in
    ``extra_hook_names`` (dispatch points of models whose code we do not own)."""
    extra = tuple(getattr(model, "extra_hook_names", ()))
    cached = model.__dict__.get("_vt_hook_names")  # walking every module costs ~0.3 ms a call
    if cached is not None and cached[0] == extra:
        return cached[1]
    names = frozenset(
        {p for p, m in model.named_modules() if isinstance(m, HookPoint)} | set(extra)
    )
    model.__dict__["_vt_hook_names"] = (extra, names)
    return names


def any_active() -> bool:
    """True inside a ``hooks()`` block of this thread: a forward pass must then compute every
    hooked activation (e.g. attention weights) rather than take a fused shortcut."""
    return bool(_ACTIVE.get())


def is_active(name: str) -> bool:
    """True when this thread has a hook function at ``name``."""
    return name in (_ACTIVE.get() or {})


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
    known = hook_names(model)
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


@contextmanager
def collect(model: nn.Module, names: list[str]) -> Iterator[dict[str, np.ndarray]]:
    """Record the named activations of the forward passes run inside the block.

    Yields a dictionary, local to this call, filled with name -> float32 numpy array of the
    first batch element (the last call wins when a hook point runs more than once).
    """
    cache: dict[str, np.ndarray] = {}

    def record(x: torch.Tensor, name: str) -> None:
        cache[name] = x[0].detach().to("cpu", torch.float32).numpy()

    with hooks(model, dict.fromkeys(names, record)):
        yield cache


@contextmanager
def collect_calls(
    model: nn.Module,
    names: list[str],
    select: Callable[[torch.Tensor], torch.Tensor] = lambda x: x[0],
) -> Iterator[dict[str, list[np.ndarray]]]:
    """Like ``collect``, but keep every call of each hook point, in call order.

    Needed where one module runs several times in a pass (ALBERT shares one attention module
    across its layers). ``select`` picks what to keep (default: the first batch element).
    """
    calls: dict[str, list[np.ndarray]] = {n: [] for n in names}

    def record(x: torch.Tensor, name: str) -> None:
        calls[name].append(select(x).detach().to("cpu", torch.float32).numpy())

    with hooks(model, dict.fromkeys(names, record)):
        yield calls
