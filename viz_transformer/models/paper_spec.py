"""What a paper-model folder is, read without PyTorch: its layout (``meta.json``, weights, the
tokenizer), its spec from ``meta.json``, and the specs of the paper models shipped in
``weights/paper-*/`` (``paper_folder.load_folder`` builds the network). The registry, and a
lesson file that names a model, read these without importing PyTorch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from viz_transformer import settings
from viz_transformer.models.spec import ModelSpec
from viz_transformer.text.spm import MODEL_FILE

PREFIX = "paper:"
META, WEIGHTS, WORDS = "meta.json", "model.safetensors", "vocab.json"
LAYOUT = f"a paper-model folder holds {META}, {WEIGHTS} and {WORDS} (or {MODEL_FILE})"


def spec_from_meta(meta: dict[str, Any], folder: Path, name: str) -> ModelSpec:
    """The spec of the paper model described by ``meta`` (its ``meta.json``) in ``folder``."""
    task = str(meta.get("task", ""))
    if task.startswith("distill-"):  # real language: distill-en-pt reads en, writes pt
        source, target = task.removeprefix("distill-").split("-")
        data: dict[str, str | None] = {"source_lang": source, "target_lang": target}
    else:
        data = {"task": task or "unknown"}
    return ModelSpec(
        name=name,
        family="paper",
        description=str(meta.get("description", f"paper model from {folder}")),
        example=str(meta.get("example", "")),
        shows=("encoder", "decoder", "cross"),
        positions="sinusoidal",
        path=folder,
        curves={"scaled", "unscaled"} <= set(meta.get("curves") or {}),
        teacher=meta.get("teacher"),
        patching=_patching(meta),
        **data,
    )


def _patching(meta: dict[str, Any]) -> tuple[str, str] | None:
    """meta.json's ``"examples": {"patching": [clean, corrupted]}``, when it has one."""
    pair = (meta.get("examples") or {}).get("patching")
    return None if pair is None else (str(pair[0]), str(pair[1]))


def read_meta(folder: Path) -> dict[str, Any]:
    """``folder/meta.json`` as a dict holding a ``config``, or a ValueError naming the file."""
    path = folder / META
    if not path.is_file():
        raise ValueError(f"{path} is missing: {LAYOUT}.")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); save the model again.") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
        raise ValueError(f'{path} has no "config" object (the network\'s sizes); {LAYOUT}.')
    return meta


def folder_spec(name: str) -> ModelSpec:
    """The spec of ``paper:<folder>`` after checking that every file of the layout is there.

    Raises:
        ValueError: no such folder, a missing or unreadable file (named), or a folder outside
            ``VT_MODEL_ROOT`` when that is set.
    """
    raw = name.removeprefix(PREFIX).strip()
    if not raw:
        raise ValueError(
            f"{name!r}: name a folder, e.g. paper:{settings.WEIGHTS_DIR / 'paper-reverse'}."
        )
    folder = Path(raw).expanduser().resolve()
    allowed = (settings.MODEL_ROOT, settings.WEIGHTS_DIR, settings.CHECKPOINTS_DIR)
    if settings.MODEL_ROOT and not any(folder.is_relative_to(r) for r in allowed if r):
        raise ValueError(f"{name}: paper folders must lie under {settings.MODEL_ROOT} here.")
    if not folder.is_dir():
        raise ValueError(f"{name}: {folder} is not a folder; {LAYOUT}.")
    meta = read_meta(folder)
    if not (folder / WEIGHTS).is_file():
        raise ValueError(f"{folder / WEIGHTS} is missing: {LAYOUT}.")
    tokenizer_file(folder)
    return spec_from_meta(meta, folder, f"{PREFIX}{folder}")


def tokenizer_file(folder: Path) -> Path:
    """``spm.model`` when present (SentencePiece), else ``vocab.json``; a ValueError if neither."""
    for file in (folder / MODEL_FILE, folder / WORDS):
        if file.is_file():
            return file
    raise ValueError(f"{folder / WORDS} (or {MODEL_FILE}) is missing: {LAYOUT}.")


def paper_specs() -> dict[str, ModelSpec]:
    """One spec per ``weights/paper-*/meta.json`` shipped in the package."""
    specs = {}
    for meta_path in sorted(settings.WEIGHTS_DIR.glob("paper-*/meta.json")):
        meta = json.loads(meta_path.read_text())
        specs[meta["name"]] = spec_from_meta(meta, meta_path.parent, meta["name"])
    return specs
