"""How a Hugging Face model is named and read: id checks, offline-first config reading, what it
shows, and its attention modules mapped onto encoder / decoder / cross (``hf.pattern_hooks`` hooks
them).
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar
from urllib.parse import urlparse

import transformers
from huggingface_hub import constants
from torch import nn
from transformers import AutoConfig, PretrainedConfig, PreTrainedModel
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.auto.modeling_auto import (
    MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
    MODEL_FOR_MASKED_LM_MAPPING_NAMES,
)
from transformers.utils.output_capturing import OutputRecorder

from viz_transformer import settings
from viz_transformer.models.hf import smollm2
from viz_transformer.records.kinds import AttentionKind

T = TypeVar("T")
Positions = Literal["sinusoidal", "learned", "relative", "rotary"]

# Hugging Face repo ids: "name" or "owner/name"; ".." and "--" are refused as the hub does.
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
T5_TYPES = frozenset({"t5", "mt5", "umt5", "longt5", "switch_transformers"})
SINUSOIDAL_TYPES = frozenset(
    {"marian", "fsmt", "pegasus", "pegasus_x", "m2m_100", "nllb-moe", "xglm", "speech_to_text"}
)
_TRUE = {"1", "ON", "YES", "TRUE"}
TOWERS = ("vision", "audio", "image")  # submodules of other inputs than text (T5Gemma 2)
HUB_TIMEOUT_S = 3.0  # a hub that does not accept a connection this fast counts as unreachable
HUB_MEMORY_S = 60.0  # how long an answer of the hub is remembered
_HUB_SEEN: dict[str, tuple[float, bool]] = {}  # endpoint -> (when asked, whether it answered)


def check_hf_id(ident: str) -> str:
    """Check a hub id or local folder by its spelling alone and return it unchanged.

    No file or network access happens here, so a bad name typed in a text box (``../../etc``)
    is refused before anything is opened.

    Raises:
        ValueError: ``ident`` is neither a hub id nor an absolute path without ``..``.
    """
    if HUB_ID.match(ident) and ".." not in ident and "--" not in ident and len(ident) <= 96:
        return ident
    path = Path(ident)
    printable = ident.isprintable() and ident.strip() == ident
    if printable and path.is_absolute() and ".." not in path.parts:
        root = settings.MODEL_ROOT
        if root is not None and not path.is_relative_to(root):
            raise ValueError(
                f"{ident} is outside the folder this server lets you load models from ({root}); "
                "put the model there or ask whoever runs the server."
            )
        return ident
    raise ValueError(
        f"{ident!r} is not a Hugging Face model: write hf:<owner>/<name> (e.g. "
        "hf:Helsinki-NLP/opus-mt-en-de) or hf:<absolute path of a model folder>, "
        "without spaces or '..'."
    )


def downloads_allowed() -> bool:
    """False when ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` forbids the hub."""
    return not any(
        os.environ.get(var, "").upper() in _TRUE
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def hub_reachable(timeout: float = HUB_TIMEOUT_S) -> bool:
    """Whether the hub (``HF_ENDPOINT``) accepts a connection within ``timeout`` seconds.

    Asked before any download, so an offline server refuses a model in seconds instead of
    waiting out the hub client's retries. Name resolution has no timeout of its own, so the
    probe runs in a thread that is waited for at most ``timeout``; the answer is remembered for
    ``HUB_MEMORY_S``.
    """
    endpoint = constants.ENDPOINT
    seen = _HUB_SEEN.get(endpoint)
    if seen is not None and time.monotonic() - seen[0] < HUB_MEMORY_S:
        return seen[1]
    url = urlparse(endpoint)
    address = (url.hostname or "", url.port or (443 if url.scheme == "https" else 80))
    answered: list[bool] = []

    def probe() -> None:
        with contextlib.suppress(OSError):
            socket.create_connection(address, timeout=timeout).close()
            answered.append(True)

    thread = threading.Thread(target=probe, daemon=True, name="hub-probe")
    thread.start()
    thread.join(timeout)  # a refused or unresolvable host ends the probe at once
    reachable = bool(answered)
    _HUB_SEEN[endpoint] = (time.monotonic(), reachable)
    return reachable


def offline_first(ident: str, load: Callable[[bool], T]) -> T:
    """Run ``load(local_files_only)`` from local files, then, for a hub id, from the hub if the
    environment allows downloads.

    Every failure becomes one ``ValueError`` naming the model and the reason, with no chained
    traceback: the app shows it as is.

    Raises:
        ValueError: the model is neither local nor downloadable, or it does not load.
    """
    try:
        return load(True)
    except OSError as exc:  # transformers' "not in the local files"
        if Path(ident).is_absolute():
            raise ValueError(f"hf:{ident} does not load from its folder: {_reason(exc)}") from None
        if not downloads_allowed():
            raise ValueError(
                f"hf:{ident} is not in the local Hugging Face cache and downloads are off "
                "(HF_HUB_OFFLINE is set). Download it where there is internet "
                f"(`hf download {ident}`) or give the absolute path of a folder holding it."
                + _builtin_hint(ident)
            ) from None
        if not hub_reachable():
            raise ValueError(
                f"hf:{ident} is not in the local Hugging Face cache, and this server cannot "
                f"reach the hub ({urlparse(constants.ENDPOINT).hostname}). Download it where "
                f"there is internet (`hf download {ident}`) or give the absolute path of a "
                "folder holding it." + _builtin_hint(ident)
            ) from None
        local_error = exc
    except Exception as exc:
        raise ValueError(f"hf:{ident} does not load: {_reason(exc)}") from None
    try:
        return load(False)
    except Exception as exc:
        raise ValueError(
            f"hf:{ident} is neither in the local cache ({_reason(local_error)}) nor downloadable "
            f"from the hub: {_reason(exc)}" + _builtin_hint(ident)
        ) from None


def _builtin_hint(ident: str) -> str:
    """A sentence naming the built-in model that is ``ident``, which works offline (or "")."""
    if ident.lower() in smollm2.HUB_IDS:
        return (
            f" The built-in model {smollm2.NAME} is SmolLM2-135M-Instruct and works "
            "offline: pick it in the Model list."
        )
    return ""


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def read_config(ident: str) -> PretrainedConfig:
    """The model's config, offline first, refusing models that need their own code.

    Raises:
        ValueError: unknown model, no download possible, or custom code required.
    """
    cfg_dict = offline_first(
        ident,
        lambda local: PretrainedConfig.get_config_dict(ident, local_files_only=local)[0],
    )
    model_type = cfg_dict.get("model_type")
    unknown = [a for a in cfg_dict.get("architectures") or [] if not hasattr(transformers, a)]
    if model_type not in CONFIG_MAPPING:
        unknown.insert(0, f"model_type {model_type!r}")
    if "auto_map" in cfg_dict and unknown:  # a known type with auto_map loads natively
        raise ValueError(
            f"hf:{ident} needs its own Python code from the model repository (config.json has "
            f"auto_map, and transformers does not know {unknown[0]}); viz-transformer never runs "
            "remote code (trust_remote_code=False). Pick a model transformers supports."
        )
    return offline_first(
        ident,
        lambda local: AutoConfig.from_pretrained(
            ident, local_files_only=local, trust_remote_code=False
        ),
    )


def model_shows(config: PretrainedConfig) -> tuple[AttentionKind, ...]:
    """Attention kinds the architecture has: encoder-decoder, decoder-only or encoder-only."""
    if getattr(config, "is_encoder_decoder", False):
        return ("encoder", "decoder", "cross")
    model_type = getattr(config, "model_type", "")
    causal_only = (
        model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
        and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    )
    return ("decoder",) if causal_only or getattr(config, "is_decoder", False) else ("encoder",)


def model_positions(config: PretrainedConfig) -> Positions:
    """How the architecture encodes positions (T5: relative buckets; Llama: rotary)."""
    model_type = getattr(config, "model_type", "")
    keys = set(config.to_dict())
    relative_bert = str(getattr(config, "position_embedding_type", "")).startswith("relative")
    if model_type in T5_TYPES or "relative_attention_num_buckets" in keys or relative_bert:
        return "relative"
    if any("rope" in k or "rotary" in k for k in keys):
        return "rotary"
    if model_type in SINUSOIDAL_TYPES:
        return "sinusoidal"
    return "learned"


def _recorders(model: PreTrainedModel) -> list[tuple[str, OutputRecorder]]:
    """The attention entries of a model's ``_can_record_outputs``, normalised as transformers
    does (a bare class or class name means "tuple index 1")."""
    out = []
    for key, specs in (getattr(model, "_can_record_outputs", None) or {}).items():
        if key not in ("attentions", "cross_attentions"):
            continue
        for spec in specs if isinstance(specs, list) else [specs]:
            if not isinstance(spec, OutputRecorder):
                named = isinstance(spec, str)
                spec = OutputRecorder(
                    target_class=None if named else spec,
                    index=1,
                    class_name=spec if named else None,
                )
            out.append((key, spec))
    return out


def _matches(spec: OutputRecorder, path: str, module: nn.Module) -> bool:
    by_class = spec.target_class is not None and isinstance(module, spec.target_class)
    by_name = spec.class_name is not None and path.endswith(spec.class_name)
    if not (by_class or by_name):
        return False
    return spec.layer_name is None or f".{spec.layer_name.strip('.')}." in f".{path}."


def attention_modules(
    model: PreTrainedModel, shows: tuple[AttentionKind, ...]
) -> dict[AttentionKind, list[tuple[str, nn.Module, int]]]:
    """Attention modules per kind, in layer order, found the way ``output_attentions`` finds them.

    Each (sub)model declares in ``_can_record_outputs`` which module classes return attention
    weights and at which tuple index; a nested submodel (T5's encoder stack) uses its own
    declaration. Self-attention inside ``model.get_encoder()`` is encoder attention, other
    self-attention is decoder attention (or encoder attention for an encoder-only model).

    Returns:
        kind -> [(module path, module, index of the weights ``[B, H, q, k]`` in its output)].
    """
    encoder = model.get_encoder() if "cross" in shows else None
    found: dict[AttentionKind, list[tuple[str, nn.Module, int]]] = {k: [] for k in shows}

    def walk(
        parent: nn.Module, prefix: str, specs: list[tuple[str, OutputRecorder]], in_encoder: bool
    ) -> None:
        for child_name, child in parent.named_children():
            if child_name.startswith(TOWERS):  # an image or audio encoder's own attention
                continue
            path = f"{prefix}{child_name}"
            child_specs = _recorders(child) if isinstance(child, PreTrainedModel) else specs
            child_in_encoder = in_encoder or child is encoder
            for key, spec in child_specs:
                kind = _kind(key, child_in_encoder, shows)
                if kind in found and _matches(spec, path, child):
                    found[kind].append((path, child, spec.index))
            walk(child, f"{path}.", child_specs, child_in_encoder)

    walk(model, "", _recorders(model), False)
    return found


def _kind(key: str, in_encoder: bool, shows: tuple[AttentionKind, ...]) -> AttentionKind:
    if key == "cross_attentions":
        return "cross"
    if "cross" in shows:
        return "encoder" if in_encoder else "decoder"
    return shows[0]
