"""``vt.retrieval_heads``: which heads copy a needle from a long input, found by running the model.

One run: the needle prompt (``needle``: the copy form or the question form), a greedy
continuation of at most the answer's tokens (the question form: the needle's) plus ``EXTRA``,
then ``vt.trace`` of prompt + output, the capture every map uses (lazy for long inputs), read
only at the rows of the output steps (``scores``). Before scoring, prompt + output is tokenised
again and compared with the generated tokens: the trace is of that text, so the scores are of
what it holds, and a tokenizer that reads it otherwise is named in ``messages``. The model is
reached through public methods only (``token_offsets``, ``greedy_ids``, ``decode``).
"""

from __future__ import annotations

from viz_transformer.analysis.capture import trace
from viz_transformer.analysis.heads import ticking
from viz_transformer.analysis.retrieval import needle as nd
from viz_transformer.analysis.retrieval import scores as sc
from viz_transformer.analysis.retrieval.result import FLAG, RetrievalResult
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import OnFraction, StopToken, with_stop
from viz_transformer.text.checks import check_text

__all__ = ["EXTRA", "FLAG", "RetrievalResult", "check_model", "one_run", "prepare"]

EXTRA = 8  # output tokens allowed past the answer (the question form: past the whole needle)


def check_model(model: LoadedModel) -> None:
    """Raises ValueError unless ``model`` is a decoder-only model with a Hugging Face tokenizer."""
    spec = model.spec
    if not spec.decoder_only:
        what = "an encoder-decoder" if spec.encoder_decoder else "not a decoder-only LLM"
        raise ValueError(
            f"Retrieval heads are found in decoder-only language models (smollm2, or any hf: "
            f"causal LM); {model.name} is {what}. Pick such a model in the sidebar."
        )


def needle_prompt(
    model: LoadedModel,
    haystack: str,
    needle: str,
    depth: float,
    form: nd.Form = "copy",
    question: str | None = None,
    answer: str | None = None,
) -> nd.NeedlePrompt:
    """``needle.build_prompt``; the question form inside the model's chat template when it has
    one (an instruction-tuned model answers a question there, and often not after "Answer:")."""
    args = (haystack, needle, depth, form, question, answer)
    if form != "question":
        return nd.build_prompt(*args)
    p = nd.build_prompt(*args, chat=True)
    try:
        wrapped = model.chat_prompt(p.text)
    except ValueError:  # no chat template
        return nd.build_prompt(*args)
    at = wrapped.find(p.text)
    if at < 0:
        return nd.build_prompt(*args)
    return p.within(wrapped[:at], wrapped[at + len(p.text) :])


def prepare(
    model: LoadedModel,
    haystack: str,
    needle: str,
    depth: float,
    form: nd.Form = "copy",
    question: str | None = None,
    answer: str | None = None,
) -> tuple:
    """The prompt (``needle.build_prompt``), its ids, needle and answer positions, and the
    output budget (the answer's tokens, the question form the needle's, plus ``EXTRA``).

    Raises:
        ValueError: bad input, named (see ``one_run``).
    """
    check_model(model)
    haystack = check_text(nd.check_needle(haystack, needle)[0], "haystack")
    p = needle_prompt(model, haystack, needle, depth, form, question, answer)
    ids, offsets = model.token_offsets(p.text)
    wanted = p.answer if form == "copy" else p.needle
    n_new = len(model.token_offsets(" " + wanted)[0]) + EXTRA
    limit = model.max_positions()
    if len(ids) + n_new > limit:
        raise ValueError(
            f"The text with the needle is {len(ids):,} tokens and the answer may take {n_new} "
            f"more: past {model.name}'s context of {limit:,} tokens. Shorten the text."
        )
    spans = nd.token_span(offsets, p.needle_span), nd.token_span(offsets, p.answer_span)
    return p, ids, *spans, n_new


def alignment(
    model: LoadedModel, generated: list[int], reread: list[int], start: int
) -> tuple[int, str]:
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


def one_run(
    model: LoadedModel,
    haystack: str,
    needle: str,
    depth: float = 0.5,
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
    *,
    prompt: nd.Form = "copy",
    question: str | None = None,
    answer: str | None = None,
) -> RetrievalResult:
    """Score every head's copy-paste retrieval of ``needle`` hidden in ``haystack`` at ``depth``.

    Args:
        model: a decoder-only model (``vt.load_model("smollm2")``, any ``hf:`` causal LM).
        haystack: a long text; needle: a sentence of at least two words to hide in it.
        depth: where the needle goes: the sentence boundary nearest this fraction (0 = start).
        progress: called with the fraction done; stop: once set, the run ends (``Cancelled``).
        prompt: ``"copy"`` (the prompt ends with the needle's first half) or ``"question"``
            (it ends by asking ``question``; the answer is the needle's tail, ``answer`` or
            ``needle.answer_of``'s): see ``needle``.

    Returns:
        A ``RetrievalResult`` (``.table``: layer, head, retrieval, sink; ``.summary()``).

    Raises:
        ValueError: an empty needle, a needle longer than the haystack, a text past the
            model's context, a model that is not decoder-only, the question form without a
            question.
    """
    p, ids, needle_at, answer_at, n_new = prepare(
        model, haystack, needle, depth, prompt, question, answer
    )
    # progress (a Stop point) also from inside the model's layers every 0.25 s: a 4,096-token
    # pass is tens of seconds on a shared CPU
    with ticking(model, with_stop(progress, stop)) as report:
        at = (lambda lo, hi: lambda f: report(lo + (hi - lo) * f)) if report else (lambda *_: None)
        step = at(0.0, 0.4)
        if step is None:
            out_ids = model.greedy_ids(ids, n_new)
        else:
            with model.stepping(lambda done, most: step(done / most)):
                out_ids = model.greedy_ids(ids, n_new)
            report(0.4)  # the trace next: one pass
        output = model.decode(out_ids)
        text = check_text(p.text + output)  # what the trace reads (stripped)
        tr = trace(model, text)
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
    recall = nd.rouge1_recall(p.answer, output)
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
        found=recall > nd.FOUND_AT,
        aligned=not note,
        depth=float(depth),
        messages=(*tr.messages, *([note] if note else [])),
        trace=tr,
        form=prompt,
        question=p.question,
        answer=p.answer,
        recall=recall,
    )
