"""What ``bench_capture.py`` times, ready to run: one ``Case`` per model and source length,
with its plain forward (a), its capture path copying nothing (a'), Hugging Face's eager attention
with ``output_attentions`` (b) and ``vt.trace`` (c), each trace checked for its shape."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

import viz_transformer as vt
from bench.harness.models import text_of
from viz_transformer.models.paper import PaperModel
from viz_transformer.networks.hooks import hooks
from viz_transformer.records.kinds import KINDS
from viz_transformer.records.trace import Trace

PAPER = "paper Transformer base size"


def uses_sdpa(call: Callable[[], object]) -> bool:
    """Whether ``call()`` runs PyTorch's fused ``scaled_dot_product_attention``."""
    calls = []
    fused = torch.nn.functional.scaled_dot_product_attention

    def counting(*args: object, **kwargs: object) -> torch.Tensor:
        calls.append(1)
        return fused(*args, **kwargs)

    torch.nn.functional.scaled_dot_product_attention = counting
    try:
        call()
    finally:
        torch.nn.functional.scaled_dot_product_attention = fused
    return bool(calls)


@dataclass
class Case:
    """One model at one length: the callables to time and what the trace must look like."""

    model: str
    n: int
    plain: Callable[[], object]
    own: Callable[[], object]
    eager: Callable[[], object] | None
    trace: Callable[[], Trace]
    notes: list[str] = field(default_factory=list)


def full_record(tr: Trace) -> Trace:
    """Every head of every kind computed (a no-op for arrays already held)."""
    for kind in KINDS:
        arr = tr.get(kind)
        if arr is not None and not isinstance(arr, np.ndarray):
            np.asarray(arr)
    return tr


def nothing(x: torch.Tensor, name: str) -> None:
    """A hook that reads nothing: it only puts the model on its capture path."""


def capture_path(module: torch.nn.Module, names: list[str], call: Callable[[], object]) -> object:
    """``call()`` with a do-nothing hook at each of ``names`` (every attention weight computed,
    none copied)."""
    with hooks(module, dict.fromkeys(names, nothing)):
        return call()


def is_lazy(tr: Trace) -> bool:
    return any(a is not None and not isinstance(a, np.ndarray) for a in map(tr.get, KINDS))


def check_trace(tr: Trace, n: int, layers: int, heads: int) -> None:
    """The trace holds every layer and head of all three kinds over N x N tokens."""
    for kind in KINDS:
        arr = tr.get(kind)
        if arr is None or tuple(arr.shape) != (layers, heads, n, n):
            shape = None if arr is None else tuple(arr.shape)
            raise RuntimeError(
                f"{tr.model_name} {kind}: shape {shape}, expected {layers, heads, n, n}"
            )
        if not (isinstance(arr, np.ndarray) or is_lazy(tr)):
            raise RuntimeError(f"{kind} is {type(arr).__name__}, not a numpy array")


def marian_cases(folder: Path, device: str, lengths: tuple[int, ...]) -> list[Case]:
    """Marian through ``hf:<folder>`` (the handle), plus an SDPA copy and an eager copy."""
    from transformers import MarianMTModel

    handle = vt.load_model(f"hf:{folder}", device)
    tok = handle.tokenizer
    copies = {
        impl: MarianMTModel.from_pretrained(folder, attn_implementation=impl).to(device).eval()
        for impl in ("sdpa", "eager")
    }
    cfg = copies["sdpa"].config
    names = [n for ns in handle.names.values() for n in ns]
    start = cfg.decoder_start_token_id
    cases = []
    for n in lengths:
        text = text_of(lambda t: len(tok(t)["input_ids"]), n)
        src = torch.tensor([tok(text)["input_ids"]], device=device)
        tgt = torch.tensor([[start, *tok(text_target=text)["input_ids"][:-1]]], device=device)
        assert src.shape[1] == tgt.shape[1] == n, (src.shape, tgt.shape)
        batch = {"input_ids": src, "attention_mask": torch.ones_like(src), "decoder_input_ids": tgt}

        def forward(module: torch.nn.Module, batch: dict = batch, **kw: object) -> object:
            with torch.no_grad():
                return module(**batch, **kw)

        tr = vt.trace(handle, text, target=text)
        check_trace(full_record(tr), n, cfg.encoder_layers, cfg.encoder_attention_heads)
        cases.append(
            Case(
                model="Marian opus-mt-base size (hf:)",
                n=n,
                plain=lambda f=forward: f(copies["sdpa"]),
                own=lambda f=forward: capture_path(handle.module, names, lambda: f(handle.module)),
                eager=lambda f=forward: f(copies["eager"], output_attentions=True),
                trace=lambda text=text: vt.trace(handle, text, target=text),
                notes=[
                    f"Marian handle loaded with attn_implementation="
                    f"{handle.module.config._attn_implementation!r}",
                    f"Marian (a) runs fused SDPA: {uses_sdpa(lambda f=forward: f(copies['sdpa']))}",
                ],
            )
        )
    return cases


def paper_cases(model: PaperModel, label: str, lengths: tuple[int, ...]) -> list[Case]:
    """A paper Transformer wrapped as ``PaperModel``, at the lengths its positions allow."""
    vocab, module, cfg, device = model.vocab, model.module, model.module.cfg, model.device
    names = [n for ns in module.pattern_hook_names().values() for n in ns]
    cases = []
    for n in (n for n in lengths if n <= cfg.max_len):
        text = text_of(lambda t: len(vocab.encode(t)), n)
        src = torch.tensor([vocab.encode(text)], device=device)
        tgt = torch.tensor([[vocab.bos_id, *vocab.encode(text, add_eos=False)]], device=device)
        assert src.shape[1] == tgt.shape[1] == n, (src.shape, tgt.shape)

        def forward(src: torch.Tensor = src, tgt: torch.Tensor = tgt) -> object:
            with torch.no_grad():
                return module(src, tgt)

        tr = vt.trace(model, text, target=text)
        check_trace(full_record(tr), n, cfg.n_encoder_layers, cfg.n_heads)
        cases.append(
            Case(
                model=label,
                n=n,
                plain=forward,
                own=lambda f=forward: capture_path(module, names, f),
                eager=None,
                trace=lambda text=text: vt.trace(model, text, target=text),
                notes=[f"{label} (a) runs fused SDPA: {uses_sdpa(forward)}"],
            )
        )
    return cases
