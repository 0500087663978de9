"""Every map of a tiny architecture (``testing.architectures``) against the same model's eager
``output_attentions``: loaded through ``hf:<folder>`` with our loader, traced on the default path
and on the long-input path (``settings.LAZY_ABOVE`` = 1, per-head maps from queries and keys),
each compared within ``ATOL`` in float32.

``check(model_type)`` gives an ``Outcome``: ``right`` (every map of both paths equal; "long path:
whole maps" where the long path keeps every map rather than queries and keys), ``refused``
(a ``ValueError`` at load or trace, its message kept), ``wrong`` (a map differs or is missing:
which, and by how much), ``crash`` (any other exception), ``no reference`` (the model's own eager
forward gives no attention weights: a family with no softmax map, or one that does not run) or
``not built`` (``BuildError``)."""

from __future__ import annotations

import contextlib
import copy
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import AutoConfig, AutoTokenizer, PretrainedConfig

from viz_transformer import settings
from viz_transformer.models.hf.load import AUTO
from viz_transformer.models.hf.model import HFModel
from viz_transformer.models.hf.spec import hf_spec
from viz_transformer.models.spec import ModelSpec
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.lazy import is_lazy
from viz_transformer.records.trace import Trace
from viz_transformer.testing.architectures import TARGET, TEXT, BuildError, built

__all__ = ["ATOL", "Outcome", "check", "reference"]

ATOL = 1e-5
STATUSES = ("right", "refused", "wrong", "crash", "no reference", "not built")
OUTPUTS = {"encoder": "encoder_attentions", "decoder": "decoder_attentions",
           "cross": "cross_attentions"}  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    """What ``check`` found for one architecture: ``status`` (one of ``STATUSES``) and why."""

    model_type: str
    status: str
    detail: str = ""

    def line(self) -> str:
        return f"{self.model_type}: {self.status}" + (f" ({self.detail})" if self.detail else "")


@contextlib.contextmanager
def lazy_above(weights: int) -> Iterator[None]:
    """Inside, ``settings.LAZY_ABOVE`` is ``weights`` (1: every trace takes the long path)."""
    before = settings.LAZY_ABOVE
    settings.LAZY_ABOVE = weights
    try:
        yield
    finally:
        settings.LAZY_ABOVE = before


def inputs(folder: Path, spec: ModelSpec) -> dict[str, list[int]]:
    """The ids ``HFModel.trace(TEXT, TARGET)`` reads (a decoder-only model reads ``TEXT``)."""
    tok = AutoTokenizer.from_pretrained(folder)
    ids = tok(TEXT)["input_ids"]
    if not spec.encoder_decoder:
        return {"input_ids": ids}
    config = AutoConfig.from_pretrained(folder)
    out = tok(text_target=TARGET)["input_ids"]
    while out and out[-1] == tok.eos_token_id:
        out = out[:-1]
    return {"input_ids": ids, "decoder_input_ids": [config.decoder_start_token_id, *out]}


def reference(
    folder: Path,
    spec: ModelSpec,
    config: PretrainedConfig | None = None,
    weights: dict[str, torch.Tensor] | None = None,
) -> dict[AttentionKind, list[np.ndarray]] | None:
    """The folder's model loaded with eager attention (and ``config``, the one our loader
    settled on, and its ``weights``, when given), its ``output_attentions`` over the ids our
    trace reads: kind -> per layer ``[heads, q, k]`` float32 (None: it gives no weights)."""
    auto = AUTO[spec.architecture]
    extra = {} if config is None else {"config": copy.deepcopy(config)}
    eager = auto.from_pretrained(folder, attn_implementation="eager", **extra).float().eval()
    if weights is not None:  # what a checkpoint leaves out is drawn anew at each load (BLT's)
        eager.load_state_dict(weights, strict=False)
    batch = {k: torch.tensor([v], device=eager.device) for k, v in inputs(folder, spec).items()}
    batch["attention_mask"] = torch.ones_like(batch["input_ids"])
    with torch.no_grad():
        out = eager(**batch, output_attentions=True, use_cache=False)
    found: dict[AttentionKind, list[np.ndarray]] = {}
    for kind in spec.shows:
        maps = getattr(out, OUTPUTS[kind] if spec.encoder_decoder else "attentions", None)
        if not maps or any(m is None for m in maps):
            return None
        found[kind] = [m[0].float().numpy() for m in maps]
    return found


def _compare(
    trace: Trace, expected: dict[AttentionKind, list[np.ndarray]], path: str
) -> str | None:
    """None when every map equals ``expected``, else what differs first."""
    for kind, ref in expected.items():
        got = trace.get(kind)
        if got is None:
            return f"{path}: no {kind} maps"
        ref = _per_call(ref, len(got), trace.messages)
        if len(got) != len(ref):
            return f"{path}: {len(got)} {kind} layers of maps, the model has {len(ref)}"
        for layer, want in enumerate(ref):
            have = np.asarray(got[layer])
            if have.shape != want.shape:
                return f"{path}: {kind} layer {layer} maps {have.shape}, expected {want.shape}"
            worst = float(np.max(np.abs(have - want)))
            if not worst <= ATOL:
                return f"{path}: {kind} layer {layer} maps differ by {worst:.3g}"
    return None


def _per_call(ref: list[np.ndarray], calls: int, messages: tuple[str, ...]) -> list[np.ndarray]:
    """``output_attentions``' maps (one per layer) as the trace's (one per attention call):
    without the layers of linear attention when the trace names them (they have no softmax
    map), each repeated when every layer calls attention as many times on the same queries and
    keys (DiffLlama's two calls)."""
    if any("linear attention" in m for m in messages):
        ref = [w for w in ref if w.min() >= 0 and (w.sum(-1) <= 1 + 1e-3).all()]
    if ref and calls > len(ref) and calls % len(ref) == 0:
        ref = [w for w in ref for _ in range(calls // len(ref))]
    return ref


def _trace(model: HFModel) -> Trace:
    return model.trace(TEXT, TARGET if model.spec.encoder_decoder else None)


def check(model_type: str) -> Outcome:
    """Build (once per process), load, trace on both paths and compare; see the module
    docstring for the statuses. A refusal's ``detail`` says whether the model's own eager
    forward gives attention weights (a refusal is right only where it gives none)."""
    try:
        folder = built(model_type)
        spec = hf_spec(f"hf:{folder}")
    except BuildError as exc:
        return Outcome(model_type, "not built", str(exc))
    try:
        model = HFModel.load(spec, "cpu")
    except ValueError as exc:
        return _refused(model_type, folder, spec, f"at load: {_one_line(exc)}")
    except Exception as exc:
        return Outcome(model_type, "crash", f"at load: {_one_line(exc)} at {_where(exc)}")
    try:
        expected = reference(folder, spec, model.module.config, model.module.state_dict())
    except Exception as exc:
        return Outcome(model_type, "no reference", f"its eager forward: {_one_line(exc)}")
    if expected is None:
        return Outcome(model_type, "no reference", "output_attentions gives no weights")
    for path, above in (("default", settings.LAZY_ABOVE), ("lazy", 1)):
        try:
            with lazy_above(above):
                trace = _trace(model)
                problem = _compare(trace, expected, path)
        except ValueError as exc:
            return _refused(model_type, folder, spec, f"{path}: {_one_line(exc)}", expected)
        except Exception as exc:
            return Outcome(model_type, "crash", f"{path}: {_one_line(exc)} at {_where(exc)}")
        if problem:
            return Outcome(model_type, "wrong", problem)
    whole = not any(is_lazy(trace.get(kind)) for kind in spec.shows)
    return Outcome(model_type, "right", "long path: whole maps" if whole else "")


def _refused(
    model_type: str,
    folder: Path,
    spec: ModelSpec,
    why: str,
    expected: dict[AttentionKind, list[np.ndarray]] | None = None,
) -> Outcome:
    if expected is None:
        with contextlib.suppress(Exception):
            expected = reference(folder, spec)
    maps = "its eager forward gives no weights" if expected is None else "it has maps"
    return Outcome(model_type, "refused", f"{why} [{maps}]")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = text if len(text) <= 240 else text[:237] + "..."
    return text if isinstance(exc, ValueError) else f"{type(exc).__name__}: {text}"


def _where(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{Path(frame.filename).name}:{frame.lineno}"
