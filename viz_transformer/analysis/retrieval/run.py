"""``vt.retrieval_heads``: which heads copy a needle from a long input, found by running the model.

One run: the needle prompt (``needle``), a greedy continuation of at most the needle's second half
plus ``EXTRA`` tokens, then ``vt.trace`` of prompt + output, the capture every map uses (lazy for
long inputs), read only at the rows of the output steps (``scores``). Before scoring, prompt +
output is tokenised again and compared with the generated tokens: the trace is of that text, so
the scores are of what it holds, and a tokenizer that reads it otherwise is named in ``messages``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from viz_transformer.analysis.capture import trace as capture
from viz_transformer.analysis.retrieval import needle as nd
from viz_transformer.analysis.retrieval import scores as sc
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import OnFraction, StopToken, with_stop
from viz_transformer.records.trace import Trace
from viz_transformer.text.checks import check_text

if TYPE_CHECKING:
    import pandas as pd

EXTRA = 8  # output tokens allowed past the needle's second half
FLAG = 0.1  # a head scoring at least this retrieves (Wu et al. 2024 use 0.1)


@dataclass(frozen=True)
class RetrievalResult:
    """One needle run. Positions index the prompt + output tokens (the trace's).

    Attributes:
        prompt, output: the text fed and the greedy continuation (decoded generated ids).
        prompt_tokens, output_tokens: their token labels.
        needle_positions: prompt positions of the inserted needle; answer_positions: those of
            its second half, which the output should copy (the denominator of ``retrieval``).
        retrieval, sink: float32 ``[layers, heads]`` (definitions: ``scores``).
        hits: ``[layers, heads, steps]`` the answer position copied at each output step, or -1.
        rows: the query row of each output step.
        found: the needle's second half is in the output; aligned: prompt + output tokenises
            back to the generated tokens; messages: what the run noticed (misalignment).
        trace: the trace scored (None once dropped to save memory).
    """

    model_name: str
    prompt: str
    output: str
    prompt_tokens: tuple[str, ...]
    output_tokens: tuple[str, ...]
    needle_positions: tuple[int, ...]
    answer_positions: tuple[int, ...]
    retrieval: np.ndarray
    sink: np.ndarray
    hits: np.ndarray
    rows: np.ndarray
    found: bool
    aligned: bool
    depth: float
    messages: tuple[str, ...] = ()
    trace: Trace | None = field(default=None, repr=False, compare=False)

    @property
    def table(self) -> pd.DataFrame:
        """One row per query head: ``layer, head, retrieval, sink``, retrieval descending."""
        import pandas as pd

        layers, heads = np.indices(self.retrieval.shape)
        df = pd.DataFrame(
            {
                "layer": layers.ravel(),
                "head": heads.ravel(),
                "retrieval": self.retrieval.ravel(),
                "sink": self.sink.ravel(),
            }
        )
        return df.sort_values(
            ["retrieval", "layer", "head"],
            ascending=[False, True, True],
            kind="stable",
            ignore_index=True,
        )

    def flagged(self, at_least: float = FLAG) -> list[tuple[int, int, float]]:
        """Heads with retrieval >= ``at_least`` as (layer, head, score), best first."""
        t = self.table
        t = t[t.retrieval >= at_least]
        return [
            (int(a), int(b), float(c))
            for a, b, c in zip(t["layer"], t["head"], t["retrieval"], strict=True)
        ]

    def copy_step(self, layer: int, head: int) -> tuple[int, int] | None:
        """(query row, key position) of the head's first copy, or None if it never copied."""
        step = sc.first_copy(self.hits, layer, head)
        return None if step is None else (int(self.rows[step]), int(self.hits[layer, head, step]))

    def without_trace(self) -> RetrievalResult:
        """This result without its trace (what a cache keeps: the trace holds every layer's
        queries and keys)."""
        return replace(self, trace=None)


def check_model(model: LoadedModel) -> None:
    """Raises ValueError unless ``model`` is a decoder-only model with a Hugging Face tokenizer."""
    spec = model.spec
    if not spec.decoder_only or not hasattr(model, "tokenizer"):
        what = "an encoder-decoder" if spec.encoder_decoder else "not a decoder-only LLM"
        raise ValueError(
            f"Retrieval heads are found in decoder-only language models (smollm2, or any hf: "
            f"causal LM); {model.name} is {what}. Pick such a model in the sidebar."
        )


def _encode(model: Any, text: str, offsets: bool = False) -> dict[str, list]:
    with model._lock:  # a fast tokenizer must not be used by two threads at once
        try:
            return model.tokenizer(text, return_offsets_mapping=offsets)
        except NotImplementedError as exc:
            raise ValueError(
                f"{model.name}'s tokenizer gives no character offsets (a slow tokenizer), so "
                "the needle's tokens cannot be found; use a model with a fast tokenizer."
            ) from exc


def greedy_ids(model: Any, ids: list[int], n_new: int, step: OnFraction | None) -> list[int]:
    """Greedy continuation of ``ids`` (a decoder-only Hugging Face model, key/value cache, the
    generation config's token rules), at most ``n_new`` ids, cut before an end id."""
    from viz_transformer.models.hf.generation import constrain

    module, eos, out = model.module, model.eos_ids(), []
    x, past = torch.tensor([ids], device=model.device), None
    with torch.no_grad():
        for i in range(n_new):
            res = module(input_ids=x, past_key_values=past, use_cache=True, logits_to_keep=1)
            logits = constrain(module.generation_config, res.logits[0, -1].float(), i, False)
            nxt = int(logits.argmax())
            if nxt in eos:
                break
            out.append(nxt)
            x, past = torch.tensor([[nxt]], device=model.device), res.past_key_values
            if step is not None:
                step((i + 1) / n_new)
    return out


def prepare(model: Any, haystack: str, needle: str, depth: float) -> tuple:
    """The prompt, its ids, needle and answer positions, and the output budget."""
    check_model(model)
    haystack = check_text(nd.check_needle(haystack, needle)[0], "haystack")
    p = nd.build_prompt(haystack, needle, depth)
    enc = _encode(model, p.text, offsets=True)
    ids, offsets = list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]
    n_new = len(_encode(model, " " + p.second)["input_ids"]) + EXTRA
    limit = model.max_positions()
    if len(ids) + n_new > limit:
        raise ValueError(
            f"The text with the needle is {len(ids):,} tokens and the answer may take {n_new} "
            f"more: past {model.name}'s context of {limit:,} tokens. Shorten the text."
        )
    spans = nd.token_span(offsets, p.needle_span), nd.token_span(offsets, p.answer_span)
    return p, ids, *spans, n_new


def alignment(model: Any, generated: list[int], reread: list[int], start: int) -> tuple[int, str]:
    """Where the output starts in the re-read ids, and a message when they differ (else "")."""
    if reread == generated:
        return start, ""
    c = next(
        (i for i, (a, b) in enumerate(zip(generated, reread, strict=False)) if a != b),
        min(len(generated), len(reread)),
    )
    gen = model.token_labels(generated[c : c + 1], False) or ("(end)",)
    got = model.token_labels(reread[c : c + 1], False) or ("(end)",)
    return max(1, min(c, start)), (
        f"The tokenizer does not read prompt + output back as the generated tokens: they differ "
        f"at token {c} ({gen[0]!r} generated, {got[0]!r} read back), {len(generated)} generated "
        f"and {len(reread)} read back. The scores are those of the text as read back (the trace)."
    )


def retrieval_heads(
    model: LoadedModel,
    haystack: str,
    needle: str,
    depth: float = 0.5,
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
) -> RetrievalResult:
    """Score every head's copy-paste retrieval of ``needle`` hidden in ``haystack`` at ``depth``.

    Args:
        model: a decoder-only model (``vt.load_model("smollm2")``, any ``hf:`` causal LM).
        haystack: a long text; needle: a sentence of at least two words to hide in it.
        depth: where the needle goes: the sentence boundary nearest this fraction (0 = start).
        progress: called with the fraction done; stop: once set, the run ends (``Cancelled``).

    Returns:
        A ``RetrievalResult`` (``.table``: layer, head, retrieval, sink).

    Raises:
        ValueError: an empty needle, a needle longer than the haystack, a text past the
            model's context, a model that is not decoder-only.
    """
    report = with_stop(progress, stop)
    p, ids, needle_at, answer_at, n_new = prepare(model, haystack, needle, depth)
    at = (lambda lo, hi: lambda f: report(lo + (hi - lo) * f)) if report else (lambda lo, hi: None)
    out_ids = greedy_ids(model, ids, n_new, at(0.0, 0.4))
    if report is not None:
        report(0.4)  # the trace next: one pass, no progress inside
    output = model._decode(out_ids)
    text = check_text(p.text + output)  # what the trace reads (stripped)
    tr = capture(model, text)
    reread = model.encode_text(text)
    if len(reread) != len(tr.tgt_tokens):
        raise RuntimeError("the trace holds another tokenisation than the text read back.")
    start, note = alignment(model, ids + out_ids, reread, len(ids))
    rows = sc.step_rows(start, len(reread) - start)
    layers = tr.decoder.shape[0]
    step = at(0.5, 1.0)
    argmax, sink = sc.row_argmax_and_sink(
        tr.decoder, rows, None if step is None else lambda i: step((i + 1) / layers)
    )
    hits = sc.copy_hits(argmax, reread[start:], reread, answer_at)
    return RetrievalResult(
        model_name=model.name,
        prompt=p.text,
        output=output,
        prompt_tokens=model.token_labels(ids),
        output_tokens=model.output_tokens(out_ids),
        needle_positions=tuple(needle_at),
        answer_positions=tuple(answer_at),
        retrieval=sc.retrieval_scores(hits, len(answer_at)),
        sink=sink,
        hits=hits,
        rows=rows,
        found=nd.found(p.second, output),
        aligned=not note,
        depth=float(depth),
        messages=(*tr.messages, *([note] if note else [])),
        trace=tr,
    )
