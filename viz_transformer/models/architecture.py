"""Reading a model's architecture off its modules, for every family alike: where its blocks are,
whether a norm runs before or after each sub-layer (from the order modules are entered in one
forward pass), and how many parameters each part holds. Adapters add what only their config
knows and call ``summarize`` (``LoadedModel.architecture``)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from torch import nn

from viz_transformer.models.base import LoadedModel
from viz_transformer.records.architecture import PARTS, ArchitectureSummary

ATTENTION_WORDS = ("attn", "attention")  # a module path through attention
RECURRENT_WORDS = ("ssru", "rnn", "lstm", "gru")  # a recurrent unit instead of self-attention
_IN_BLOCK = re.compile(r"(^|\.)\d+(\.|$)")  # a path through a numbered block


def is_norm(module: nn.Module) -> bool:
    """LayerNorm, RMSNorm and every ``*Norm`` class of the Hugging Face families."""
    return "Norm" in type(module).__name__


def first_block(module: nn.Module) -> tuple[str, nn.Module]:
    """The first block of the last stack: element 0 of the last ``ModuleList`` that is not
    inside another one (``decoder.layers.0``, ``model.layers.0``, ``encoder.layer.0``).

    Raises:
        ValueError: no list of blocks in ``module``.
    """
    lists = [
        (path, mod)
        for path, mod in module.named_modules()
        if isinstance(mod, nn.ModuleList) and len(mod) and not _IN_BLOCK.search(path)
    ]
    if not lists:
        raise ValueError(f"{type(module).__name__} has no list of blocks to read.")
    path, blocks = lists[-1]
    return f"{path}.0", blocks[0]


@contextmanager
def entry_order(block: nn.Module) -> Iterator[list[str]]:
    """The paths (relative to ``block``) of its descendants in the order this thread enters them
    during the block's own forward, each once, while the context is open (work done outside it,
    such as cross-attention keys projected once per source, is left out); hooks removed on exit.
    """
    order: list[str] = []
    thread = threading.get_ident()
    inside = [False]

    def record(path: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: object) -> None:
            if inside[0] and threading.get_ident() == thread and path not in order:
                order.append(path)

        return hook

    def enter(module: nn.Module, args: object) -> None:
        inside[0] = inside[0] or threading.get_ident() == thread

    def leave(module: nn.Module, args: object, output: object) -> None:
        if threading.get_ident() == thread:
            inside[0] = False

    handles = [block.register_forward_pre_hook(enter), block.register_forward_hook(leave)]
    handles += [m.register_forward_pre_hook(record(p)) for p, m in block.named_modules() if p]
    try:
        yield order
    finally:
        for handle in handles:
            handle.remove()


def norm_layout(
    module: nn.Module, probe: Callable[[], object]
) -> tuple[str, str, str, tuple[str, ...], tuple[str, ...]]:
    """Where the norms of ``first_block`` sit, from one forward pass ``probe()``.

    Returns:
        (placement, norm class, block path, the block's norms in call order, norms outside every
        block). Placement is ``pre`` when a norm is entered before the block's first sub-layer
        (``_sublayer``), ``post`` otherwise.
    """
    path, block = first_block(module)
    mods = dict(block.named_modules())
    with entry_order(block) as order:
        probe()
    norms = tuple(p for p in order if is_norm(mods[p]))
    if not norms:
        raise ValueError(f"{path} ran no norm module; nothing to say about its normalisation.")
    products = [p for p in order if _sublayer(mods[p])]
    pre = not products or order.index(norms[0]) < order.index(products[0])
    outside = tuple(
        p for p, m in module.named_modules() if p and is_norm(m) and not _IN_BLOCK.search(p)
    )
    return "pre" if pre else "post", type(mods[norms[0]]).__name__, path, norms, outside


def _sublayer(module: nn.Module) -> bool:
    """A module that multiplies by a matrix and normalises nothing itself: a projection, an
    attention or recurrent unit (even one using a fused weight directly), not a wrapper that
    holds a norm (T5's ``T5LayerSelfAttention``)."""
    subtree = list(module.modules())
    return not any(is_norm(m) for m in subtree) and any(
        p.dim() == 2
        for m in subtree
        if not isinstance(m, nn.Embedding)
        for p in m.parameters(False)
    )


def _weight_matrix(module: nn.Module) -> bool:
    weight = module._parameters.get("weight")
    return weight is not None and weight.dim() == 2 and not isinstance(module, nn.Embedding)


def parameter_parts(module: nn.Module, vocab: int) -> dict[str, int]:
    """Parameters per part, each tensor counted once (tied weights under the first owner).

    Embedding tables are ``embeddings``; norm modules ``norms``; inside a numbered block, a path
    through attention is ``attention``, a recurrent unit ``other``, the rest ``feed-forward``;
    outside the blocks a matrix with ``vocab`` outputs is the ``output`` layer, the rest ``other``.
    """
    parts = dict.fromkeys(PARTS, 0)
    seen: set[int] = set()
    for path, mod in module.named_modules():
        for param in mod.parameters(recurse=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            parts[_part(path, mod, vocab)] += param.numel()
    return parts


def _part(path: str, mod: nn.Module, vocab: int) -> str:
    lower = path.lower()
    if isinstance(mod, nn.Embedding):
        return "embeddings"
    if is_norm(mod):
        return "norms"
    if _IN_BLOCK.search(path):
        if any(w in lower for w in ATTENTION_WORDS):
            return "attention"
        return "other" if any(w in lower for w in RECURRENT_WORDS) else "feed-forward"
    weight = mod._parameters.get("weight")
    return "output" if weight is not None and vocab in weight.shape else "other"


def ffn_gated(module: nn.Module, d_ff: int) -> bool:
    """Whether the first block's feed-forward has three matrices touching ``d_ff`` (gate, up,
    down: SwiGLU, GeGLU) rather than two."""
    _, block = first_block(module)
    touching = [
        p
        for p, m in block.named_modules()
        if _weight_matrix(m)
        and d_ff in m.weight.shape
        and not is_norm(m)
        and not any(w in p.lower() for w in ATTENTION_WORDS)
    ]
    return len(touching) >= 3


def summarize(
    model: LoadedModel,
    probe: Callable[[], object],
    *,
    positions: str,
    heads: int,
    kv_heads: int,
    d_head: int,
    d_ff: int,
    activation: str,
    tied: bool | None,
    context: int | None,
) -> ArchitectureSummary:
    """The ``ArchitectureSummary`` of ``model``: what the arguments (read by the adapter from its
    config) say, and what the modules show (blocks, norms, parameters, widths).

    Args:
        probe: runs one short forward pass of ``model.module`` (for the norms' call order).
    """
    module, spec = model.module, model.spec
    vocab, d_model = model.input_embedding().weight.shape
    facts = model.facts
    placement, norm_type, block, norms, outside = norm_layout(module, probe)
    dtype = next(module.parameters()).dtype
    kv = mha = None
    if "decoder" in facts.kinds:  # a self-attention cache grows by one K and one V per layer
        per_head = 2 * facts.layers["decoder"] * d_head * dtype.itemsize
        kv, mha = per_head * kv_heads, per_head * heads
    return ArchitectureSummary(
        name=model.name,
        architecture=spec.architecture,
        layers=facts.stacks,
        d_model=int(d_model),
        vocab=int(vocab),
        norm_placement=placement,  # type: ignore[arg-type]
        norm_type=norm_type,
        block=block,
        block_norms=norms,
        outside_norms=outside,
        positions=positions,
        heads=heads,
        kv_heads=kv_heads,
        d_head=d_head,
        kv_bytes_per_token=kv,
        mha_kv_bytes_per_token=mha,
        dtype=str(dtype).removeprefix("torch."),
        ffn_activation=activation,
        ffn_gated=ffn_gated(module, d_ff),
        d_ff=d_ff,
        tied_embeddings=tied,
        parameters=parameter_parts(module, int(vocab)),
        context_length=context,
    )
