"""What the registry lists of a model before loading it (its ``ModelSpec``), and the facts of a
loaded one (``ModelFacts``): the attention kinds it shows, what follows from them, the layers
and heads of each kind and its example inputs. Pages and analysis read these named facts
instead of indexing ``shows`` or comparing a model's name."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from viz_transformer.records.kinds import KIND_SHORT, Architecture, AttentionKind, architecture_of

Family = Literal["paper", "bergamot", "hf"]
LANGUAGES = {"en": "English", "pt": "Portuguese"}  # names of the ISO codes specs use
_WORD = re.compile(r"[^\W\d_]+(?:[-'][^\W\d_]+)*")  # letters, maybe joined by - or '


class KindFacts:
    """What follows from the attention kinds a model shows (``kinds``, in ``KINDS`` order), the
    same for a spec and for the facts of a loaded model.

    The architecture is named by the last kind: an encoder-decoder shows cross-attention even
    when its decoder has no self-attention map (Bergamot's recurrent decoder)."""

    if TYPE_CHECKING:
        kinds: tuple[AttentionKind, ...]

    @property
    def architecture(self) -> Architecture:
        """``encoder-only``, ``decoder-only`` or ``encoder-decoder``."""
        return architecture_of(self.kinds)

    @property
    def encoder_only(self) -> bool:
        """An encoder only (BERT family): it writes no output, so nothing decodes or ablates."""
        return self.architecture == "encoder-only"

    @property
    def decoder_only(self) -> bool:
        """A decoder only (GPT family): it continues its prompt, with no source to attend to."""
        return self.architecture == "decoder-only"

    @property
    def encoder_decoder(self) -> bool:
        """A translator: an encoder reads the source, a decoder writes the output."""
        return self.architecture == "encoder-decoder"

    @property
    def has_decoder(self) -> bool:
        """Whether it writes output tokens (a decoder-only model or an encoder-decoder)."""
        return not self.encoder_only


@dataclass(frozen=True)
class ModelSpec(KindFacts):
    """What the registry knows of a model before loading it."""

    name: str
    family: Family
    description: str
    example: str  # pre-filled sentence
    shows: tuple[AttentionKind, ...]  # attention kinds with a map
    positions: Literal["sinusoidal", "learned", "relative", "rotary"]
    path: Path | str  # weights folder, or a Hugging Face id
    curves: bool = False  # training curves with and without 1/sqrt(d_k) were recorded
    source_lang: str | None = None  # ISO code of the language it reads ("en"), None: a task/any
    target_lang: str | None = None  # ISO code of the language it writes, None: a task/none/any
    task: str | None = None  # a built-in task's name ("reverse") instead of real language
    teacher: str | None = None  # the model it was distilled from (the sidebar links to it)
    # activation patching's clean and corrupted inputs: equal token counts, different outputs
    # (meta.json's "examples": {"patching": [...]}); None: built from ``example``
    patching: tuple[str, str] | None = None

    @property
    def kinds(self) -> tuple[AttentionKind, ...]:
        """The attention kinds with a map (``shows``)."""
        return self.shows

    @property
    def patch_pair(self) -> tuple[str, str]:
        """Clean and corrupted inputs for activation patching: the model's own pair, else its
        example and the example with two words swapped (the same tokens in another order, so
        both have as many tokens and the outputs differ)."""
        return self.patching or (self.example, swapped_words(self.example))

    @property
    def data(self) -> str:
        """What it reads: ``"task: reverse"``, ``"English -> Portuguese"``, ``"English"``."""
        if self.task is not None:
            return f"task: {self.task}"
        names = [LANGUAGES.get(c, c) for c in (self.source_lang, self.target_lang) if c]
        return " -> ".join(names) if names else "any text"

    def summary(self) -> str:
        """One line a model picker shows: architecture, the attention kinds with a map, the
        positions and the data, e.g. ``"encoder-decoder: encoder self, cross attention;
        sinusoidal positions; English -> Portuguese"``."""
        shows = ", ".join(KIND_SHORT[k] for k in self.shows)
        return f"{self.architecture}: {shows}; {self.positions} positions; {self.data}"


@dataclass(frozen=True)
class ModelFacts(KindFacts):
    """What a loaded model is (``LoadedModel.facts``): the kinds it shows, the layers and heads
    of each, and its example inputs. Plain values, cheap to keep beside results that compare
    models or gather statistics per kind."""

    name: str
    kinds: tuple[AttentionKind, ...]
    layers: Mapping[AttentionKind, int]  # layers with a map of the kind
    heads: Mapping[AttentionKind, int]  # query heads per layer of the kind
    example: str  # pre-filled sentence
    patch_pair: tuple[str, str]  # clean and corrupted inputs of equal token count

    def shape(self, kind: AttentionKind) -> tuple[int, int]:
        """(layers, heads) of ``kind``, as ``LoadedModel.attention_shape``."""
        return self.layers[kind], self.heads[kind]

    @property
    def stacks(self) -> dict[Literal["encoder", "decoder"], int]:
        """Layers per stack: ``{"encoder": 6, "decoder": 2}``. A decoder counts the layers of
        its last kind: an encoder-decoder's cross-attention (one per decoder layer, also when
        the decoder has no self-attention map)."""
        found: dict[Literal["encoder", "decoder"], int] = {}
        if "encoder" in self.kinds:
            found["encoder"] = self.layers["encoder"]
        if self.has_decoder:
            found["decoder"] = self.layers[self.kinds[-1]]
        return found


def swapped_words(text: str) -> str:
    """``text`` with its first and last different words swapped, the first word of a longer
    text left alone (a capital there tokenizes differently): ``"The cat sat on the mat."`` ->
    ``"The mat sat on the cat."``. Without two different words, the text reversed."""
    words = list(_WORD.finditer(text))
    words = words[1:] if len(words) > 2 else words
    first = words[0] if words else None
    last = next((w for w in reversed(words) if first and w[0] != first[0]), None)
    if first is None or last is None:
        return text[::-1]
    a, b = first.span(), last.span()
    return text[: a[0]] + last[0] + text[a[1] : b[0]] + first[0] + text[b[1] :]
