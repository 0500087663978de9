"""A tiny random model of every text architecture transformers ships, built offline from its
default config: every causal-LM, masked-LM and sequence-to-sequence model type of its auto
mappings, shrunk (2 layers, width 64, 4 heads, a vocabulary of ``VOCAB``, windows shorter than
``TEXT``, 4 experts), saved with a word-level tokenizer to a folder that loads as
``hf:<folder>``. ``built(model_type)`` builds each once per process (``tests`` and
``bench/architectures.py`` share the cache), its weights drawn from a generator of its own."""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PretrainedConfig, PreTrainedTokenizerFast
from transformers.models.auto import modeling_auto
from transformers.models.auto.configuration_auto import CONFIG_MAPPING

from viz_transformer.testing.hf import seeded
from viz_transformer.testing.hf_tokenizers import LETTERS

__all__ = ["ARCHITECTURES", "TARGET", "TEXT", "BuildError", "build", "built", "shrink"]

TEXT = "the small cat ran to the red tree and the dog sat on the mat"  # 14 words
TARGET = "a bird sat on the red house"
VOCAB = 128
WINDOW = 4  # a sliding window, a local attention window: shorter than ``TEXT``
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>", "<mask>", "<sep>", "<cls>"]
# every causal-LM, masked-LM and sequence-to-sequence model type -> the class built (a masked LM
# where there is one: the loader reads an encoder-only model through AutoModel)
_MAPPINGS = (
    modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    modeling_auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES,
    modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
)
ARCHITECTURES: dict[str, str] = {}
for _mapping in _MAPPINGS:
    for _type, _cls in _mapping.items():
        ARCHITECTURES.setdefault(_type, _cls)
ARCHITECTURES = dict(sorted(ARCHITECTURES.items()))

# sub-configs that make a model more than a text model (images, audio, speech)
NOT_TEXT = ("vision_config", "audio_config", "speech_config", "vq_config", "image_config",
            "audio_encoder_config", "perceiver_config", "codec_config",
            "depth_decoder_config", "vision_encoder_config", "projector_config",
            "acoustic_tokenizer_encoder_config")  # fmt: skip
SIZES: dict[str, int] = {  # attribute -> tiny value, set where the config has the attribute
    "num_hidden_layers": 2,
    "num_layers": 2,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "num_decoder_layers": 2,
    "n_layer": 2,
    "n_layers": 2,
    "num_encoder_layers": 2,
    "hidden_size": 64,
    "d_model": 64,
    "n_embd": 64,
    "embed_dim": 64,
    "dim": 64,
    "num_attention_heads": 4,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "num_heads": 4,
    "n_head": 4,
    "n_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "d_kv": 16,
    "attention_head_size": 16,
    "kv_channels": 16,
    "intermediate_size": 128,
    "ffn_dim": 128,
    "encoder_ffn_dim": 128,
    "decoder_ffn_dim": 128,
    "d_ff": 128,
    "n_inner": 128,
    "moe_intermediate_size": 32,
    "shared_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "expert_intermediate_size": 32,
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "moe_num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_topk": 2,
    "top_k": 2,
    "n_group": 1,
    "topk_group": 1,
    "n_shared_experts": 1,
    "num_shared_experts": 1,
    "first_k_dense_replace": 1,
    "sliding_window": WINDOW,
    "attention_window": WINDOW,
    "local_window_size": WINDOW,
    "window_size": WINDOW,
    "local_attention": WINDOW,
    "block_size": 2,
    "kv_lora_rank": 16,
    "q_lora_rank": 32,
    "qk_rope_head_dim": 16,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "qk_head_dim": 32,
    "attention_head_dim": 16,
    "d_head": 16,
    "mamba_headdim": 16,
    "mamba_d_head": 16,
    "mamba_n_heads": 8,
    "n_mamba_heads": 8,
    "swa_head_dim": 16,
    "swa_num_attention_heads": 4,
    "swa_num_key_value_heads": 2,
    "sliding_window_size": WINDOW,
    "rotary_dim": 8,
    "hidden_size_global": 64,
    "encoder_hash_byte_group_vocab": 64,
    "local_attention_window_len": WINDOW,
    "d_latents": 64,
    "num_latents": 16,
    "vocab_size_per_layer_input": VOCAB,
    "hidden_size_per_layer_input": 16,
    "attention_hidden_size": 128,
    "adapter_rank": 8,
    "cross_attention_hidden_size": 64,
    "query_pre_attn_scalar": 16,
    "num_global_tokens": 4,
    "embedding_size": 64,
    "vocab_size": VOCAB,
}
TOKEN_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "unk_token_id": 3,
             "mask_token_id": 4, "sep_token_id": 5, "cls_token_id": 6,
             "decoder_start_token_id": 1}  # fmt: skip
OVERRIDES: dict[str, dict[str, Any]] = {  # what a family needs beyond ``SIZES``
    "mamba2": {"head_dim": 32},  # heads x head_dim = 2 x width
    "xmod": {"default_language": "en_XX"},
    "zaya": {"num_experts_per_tok": 1},
    "dots3_note_text": {"swa_head_dim": 32},  # its sliding heads: nope + rope dimensions
    "jamba": {"attn_layer_offset": 1, "attn_layer_period": 2},  # one attention layer of 2
    "bamba": {"attn_layer_indices": [1]},
    "granitemoehybrid": {"layer_types": ["linear_attention", "full_attention"]},
    "recurrent_gemma": {"num_hidden_layers": 3},  # recurrent, recurrent, attention
    "falcon_h1": {"mamba_d_ssm": 128},
    "deepseek_v2": {"num_experts_per_tok": 2, "n_group": 1, "topk_group": 1},
    "pegasus_x": {"block_size": 4},
    "esm": {"pad_token_id": 0, "mask_token_id": 4},
    "lfm2_moe": {"layer_types": ["conv", "full_attention"]},
    "esmc": {"num_key_value_heads": 4},
    "reformer": {"axial_pos_shape": [16, 32], "axial_pos_embds_dim": [32, 32]},
}
_LOCK = threading.Lock()
_BUILT: dict[str, Path | BuildError] = {}
_ROOT: list[Path] = []


class BuildError(RuntimeError):
    """The architecture has no tiny text model here (why in the message)."""


def _sub_configs(config: PretrainedConfig) -> list[PretrainedConfig]:
    subs = [v for v in vars(config).values() if isinstance(v, PretrainedConfig)]
    return [config, *(c for s in subs for c in _sub_configs(s))]


def _layers(config: PretrainedConfig) -> int | None:
    for key in ("num_hidden_layers", "num_layers", "n_layer", "decoder_layers"):
        value = config.to_dict().get(key)
        if isinstance(value, int):
            return value
    return None


def _keep(types: list[Any], tiny: int) -> list[int]:
    """Which layers a model of ``tiny`` layers keeps: the first of each kind in ``types``
    (full and sliding attention, linear attention, ...), then the first layers."""
    names = [str(t) for t in types]
    picked = [names.index(k) for k in dict.fromkeys(names)][:tiny]
    rest = [i for i in range(len(names)) if i not in picked]
    return sorted(picked + rest[: tiny - len(picked)])


def shrink(config: PretrainedConfig) -> PretrainedConfig:
    """``config`` and its text sub-configs made tiny in place (``SIZES``, ``TOKEN_IDS``); a
    per-layer list (layer types, which layers hold experts) keeps one entry of each kind.

    Returns:
        ``config``.
    """
    for cfg in _sub_configs(config):
        with contextlib.suppress(AttributeError):  # Gemma 4: every layer alike when tiny
            if cfg.per_layer_config:
                cfg.per_layer_config = {}
        before = _layers(cfg)
        grouped = _grouped(cfg)
        present = set(cfg.to_dict()) | set(getattr(cfg, "attribute_map", {}))
        for key, value in SIZES.items():
            if key not in present:
                continue
            current = getattr(cfg, key, None)
            if type(current) is int or (key in ("head_dim", "vocab_size") and current is None):
                setattr(cfg, key, value)
        if not grouped and "num_key_value_heads" in present:  # keys as many as queries (MLA)
            cfg.num_key_value_heads = SIZES["num_attention_heads"]
        for key, value in TOKEN_IDS.items():
            if key in present and getattr(cfg, key, None) is not None:
                setattr(cfg, key, value)
        if before and before > 2:
            _shrink_layer_lists(cfg, before)
        if "max_position_embeddings" in present:
            cfg.max_position_embeddings = min(cfg.max_position_embeddings or 512, 512)
    return config


def _grouped(cfg: PretrainedConfig) -> bool:
    """Whether ``cfg`` shares key heads among query heads (fewer key/value heads)."""
    with contextlib.suppress(Exception):
        kv, heads = cfg.num_key_value_heads, cfg.num_attention_heads
        return isinstance(kv, int) and isinstance(heads, int) and kv < heads
    return False


def _shrink_layer_lists(cfg: PretrainedConfig, before: int) -> None:
    lists = {k: v for k, v in vars(cfg).items() if isinstance(v, list) and len(v) == before}
    types = lists.get("layer_types") or next(iter(lists.values()), None) or list(range(2))
    keep = _keep(types, 3 if len(set(map(str, types))) > 2 else 2)
    for key, value in lists.items():
        setattr(cfg, key, [value[i] for i in keep])
    for key in ("num_hidden_layers", "num_layers", "n_layer", "decoder_layers"):
        if key in cfg.to_dict() and isinstance(cfg.to_dict()[key], int):
            setattr(cfg, key, len(keep))


def tokenizer() -> PreTrainedTokenizerFast:
    """Words of ``TEXT`` and ``TARGET``, letters and the specials, one id each."""
    words = sorted({w for line in (TEXT, TARGET) for w in line.split()})
    vocab = {t: i for i, t in enumerate(dict.fromkeys([*SPECIALS, *words, *LETTERS]))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    names = ("pad", "bos", "eos", "unk", "mask", "sep", "cls")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        model_max_length=512,
        **{f"{n}_token": s for n, s in zip(names, SPECIALS, strict=True)},
    )


def _model_class(model_type: str) -> Callable[..., torch.nn.Module]:
    import transformers

    return getattr(transformers, ARCHITECTURES[model_type])


def build(model_type: str, folder: Path) -> Path:
    """Save the tiny ``model_type`` (seeded weights) and its tokenizer in ``folder``.

    Raises:
        BuildError: not a text model, or its default config does not build offline.
    """
    try:
        config = CONFIG_MAPPING[model_type]()
    except Exception as exc:
        raise BuildError(f"its default config does not build: {_short(exc)}") from None
    extra = [k for k in NOT_TEXT if getattr(config, k, None) is not None]
    if extra:
        raise BuildError(f"not a text model ({extra[0]})")
    try:
        shrink(config)
        for key, value in OVERRIDES.get(model_type, {}).items():
            setattr(config, key, value)
        if config.is_encoder_decoder:
            config.decoder_start_token_id = TOKEN_IDS["decoder_start_token_id"]
        elif model_type not in modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
            config.is_decoder = True  # a causal LM only (BertGeneration's decoder)
        with seeded(0):
            model = _model_class(model_type)(config).eval()
        folder.mkdir(parents=True, exist_ok=True)
        tokenizer().save_pretrained(folder)
        model.save_pretrained(folder)
    except Exception as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise BuildError(f"the tiny model does not build: {_short(exc)}") from None
    return folder


def built(model_type: str) -> Path:
    """The folder of the tiny ``model_type``, built once per process in a temporary folder
    (removed at exit).

    Raises:
        BuildError: as ``build``, remembered.
    """
    with _LOCK:
        if model_type not in _BUILT:
            if not _ROOT:
                _ROOT.append(Path(tempfile.mkdtemp(prefix="vt-architectures-")))
                atexit.register(shutil.rmtree, _ROOT[0], True)
            try:
                _BUILT[model_type] = build(model_type, _ROOT[0] / model_type)
            except BuildError as exc:
                _BUILT[model_type] = exc
        found = _BUILT[model_type]
    if isinstance(found, BuildError):
        raise found
    return found


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text[:200]}"
