"""Hook points (identity modules named from module paths) and the per-thread hook context.

Hook functions live in a ``ContextVar``, not on the modules, so one cached model can serve many
Streamlit sessions in threads: a capture in one thread never sees another thread's hooks, and
leaving the ``hooks()`` block (normally or by an exception) removes everything it added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np
import torch
from torch import nn

HookFn = Callable[[torch.Tensor, str], "torch.Tensor | None"]

_ACTIVE: ContextVar[Mapping[str, tuple[HookFn, ...]] | None] = ContextVar("vt_hooks", default=None)

# Where each attention kind sits in our own networks (paper, Marian): its stack and its sub-layer.
ATTENTION_SUBLAYERS: dict[str, tuple[str, str]] = {
    "encoder": ("encoder", "self_attn"),
    "decoder": ("decoder", "self_attn"),
    "cross": ("decoder", "cross_attn"),
}
ATTENTION_POINTS = ("hook_q", "hook_k", "hook_v", "hook_scores", "hook_pattern", "hook_z")
# the stream each kind's queries are made from: cross-attention reads it after the sub-layer
# before it (masked self-attention, or Marian's recurrent unit)
QUERY_STREAMS = {
    "encoder": "hook_resid_pre",
    "decoder": "hook_resid_pre",
    "cross": "hook_resid_mid",
}
# the two parts of layer 0's input on each side: sqrt(d_model) * embedding, position vector
EMBED_POINTS = {
    "encoder": ("hook_src_embed", "hook_src_pos"),
    "decoder": ("hook_tgt_embed", "hook_tgt_pos"),
}


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

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        # straight to ``dispatch``: ``nn.Module.__call__``'s hook bookkeeping costs ~2 us per
        # point, dozens of points per decoding step; PyTorch's own forward hooks on a HookPoint
        # therefore never run (hook functions go through ``hooks()`` instead)
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


def point_name(path: str, point: str) -> str:
    """The name of hook point ``point`` of the module at ``path`` (``""``: the root module).

    Raises:
        ValueError: ``point`` is not a hook point's attribute name (``hook_...``).
    """
    if not point.startswith("hook_"):
        raise ValueError(f"{point!r} is no hook point: their names start with 'hook_'.")
    return f"{path}.{point}" if path else point


def hook_name(stack: str, layer: int, sublayer: str | None, point: str) -> str:
    """The name of ``point`` in a layer of ``stack``: ``("decoder", 1, "cross_attn", "hook_q")``
    gives ``decoder.layers.1.cross_attn.hook_q``; with ``sublayer`` None, a point of the layer
    itself (``encoder.layers.0.hook_resid_pre``)."""
    path = f"{stack}.layers.{layer}" if sublayer is None else f"{stack}.layers.{layer}.{sublayer}"
    return point_name(path, point)


def attention_hook_name(kind: str, layer: int, point: str) -> str:
    """The name of ``point`` in the attention sub-layer of ``kind`` (``"encoder"``,
    ``"decoder"`` or ``"cross"``) at ``layer`` of our own networks."""
    stack, sublayer = ATTENTION_SUBLAYERS[kind]
    return hook_name(stack, layer, sublayer, point)


def attention_hook_names(
    model: nn.Module, kinds: Iterable[str], point: str = "hook_pattern"
) -> dict[str, list[str]]:
    """Per kind, ``point`` of every layer's attention sub-layer in layer order, in one of our
    own networks (whose stacks are ``model.encoder.layers`` and ``model.decoder.layers``)."""
    return {
        kind: [
            attention_hook_name(kind, i, point)
            for i in range(len(getattr(model, ATTENTION_SUBLAYERS[kind][0]).layers))
        ]
        for kind in kinds
    }


def query_stream_name(kind: str, layer: int) -> str:
    """The residual-stream point the attention of ``kind`` at ``layer`` makes its queries from."""
    return hook_name(ATTENTION_SUBLAYERS[kind][0], layer, None, QUERY_STREAMS[kind])


def encoder_output_name(model: nn.Module) -> str:
    """The encoder's output (the last layer's ``hook_resid_post``): cross-attention's keys and
    values are made from it."""
    return hook_name("encoder", len(model.encoder.layers) - 1, None, "hook_resid_post")


def qkv_hook_names(model: nn.Module, kind: str) -> list[str]:
    """Every point the Q, K, V walkthrough of ``kind`` reads in one of our own networks: per layer
    the queries' stream and ``ATTENTION_POINTS``, plus layer 0's input parts (self-attention)
    or the encoder output (cross-attention)."""
    names = list(EMBED_POINTS[kind]) if kind in EMBED_POINTS else [encoder_output_name(model)]
    for i in range(len(getattr(model, ATTENTION_SUBLAYERS[kind][0]).layers)):
        names += [query_stream_name(kind, i)]
        names += [attention_hook_name(kind, i, p) for p in ATTENTION_POINTS]
    return names


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


def _check_known(model: nn.Module, names: list[str]) -> None:
    known = hook_names(model)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            f"unknown hook points {unknown}; this model has {len(known)}, e.g. {sorted(known)[:4]}."
        )


def known_hook(model: nn.Module, name: str) -> str:
    """``name``, once checked to be a hook point of ``model``.

    Raises:
        ValueError: it is not; the message gives names the model has.
    """
    _check_known(model, [name])
    return name


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
    _check_known(model, list(fwd_hooks))
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
def record_calls(
    model: nn.Module, names: list[str], select: Callable[[torch.Tensor], torch.Tensor]
) -> Iterator[dict[str, list[torch.Tensor]]]:
    """Like ``collect_calls``, but keep ``select(x)`` of every call as a tensor on the model's
    device: a caller that records at every decoding step stacks them and crosses to the CPU
    once, rather than once per call."""
    calls: dict[str, list[torch.Tensor]] = {n: [] for n in names}

    def record(x: torch.Tensor, name: str) -> None:
        calls[name].append(select(x).detach())

    with hooks(model, dict.fromkeys(names, record)):
        yield calls


@contextmanager
def collect_calls(
    model: nn.Module,
    names: list[str],
    select: Callable[[torch.Tensor], torch.Tensor] = lambda x: x[0],
    host: bool = True,
) -> Iterator[dict[str, list[Any]]]:
    """Like ``collect``, but keep every call of each hook point, in call order.

    Needed where one module runs several times in a pass (ALBERT shares one attention module
    across its layers). ``select`` picks what to keep (default: the first batch element);
    ``host`` False keeps the tensors where the model made them, in the dtype it made them in
    (a bfloat16 model's queries and keys stay bfloat16: half the memory), instead of CPU float32
    numpy arrays.
    """
    calls: dict[str, list[Any]] = {n: [] for n in names}

    def record(x: torch.Tensor, name: str) -> None:
        kept = select(x).detach()
        calls[name].append(kept.to("cpu", torch.float32).numpy() if host else kept)

    with hooks(model, dict.fromkeys(names, record)):
        yield calls
