"""Retrieval heads over depths x lengths (x haystacks): one needle run per (haystack, length,
depth), each head's mean and spread over the runs and its score in each (depth, length) cell
(``sweep_result``); resumable and stoppable like the corpus statistics.

A length cuts each haystack at the sentence boundary that keeps the prompt (needle and question
or first half included) at or under that many tokens (``fit``). Each finished run is kept in
``out`` as soon as it ends: a folder (one ``.npz`` file per run, no pickle, named by ``run_key``:
a cheap identity of the model's weights, the text, the needle, the depth and the prompt) or a
mapping (the app keeps one per job). A run found there is not run again, so a stopped or killed
sweep started again computes only what is missing; a kept run's haystack index is that of the
text its key was made from, so the texts may come in another order. Stop: between two runs and
at every progress point of a run (``Cancelled``); the runs kept stay.
"""

from __future__ import annotations

import hashlib
from collections.abc import MutableMapping, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from viz_transformer.analysis.retrieval import needle as nd
from viz_transformer.analysis.retrieval.identity import model_identity
from viz_transformer.analysis.retrieval.result import from_arrays, to_arrays
from viz_transformer.analysis.retrieval.run import needle_prompt, one_run, prepare
from viz_transformer.analysis.retrieval.sweep_result import RetrievalSweep, RunSummary
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import OnFraction, StopToken, with_stop

__all__ = ["RetrievalSweep", "RunSummary", "fit", "retrieval_sweep", "run_key"]


def text_hash(text: str) -> str:
    """SHA-256 (hex) of a haystack as given."""
    return hashlib.sha256(text.encode()).hexdigest()


def run_key(model: LoadedModel, haystack: str, needle: str, depth: float, *prompt: str) -> str:
    """A name for one run: the same weights (``model_identity``), text, needle, depth and prompt
    (form, question, answer) always give the same key."""
    h = hashlib.sha256()
    for part in (model.name, model_identity(model), haystack, needle, f"{float(depth):.6f}"):
        h.update(part.encode())
        h.update(b"\0")
    for part in prompt:
        h.update(f"{part}\0".encode())
    return h.hexdigest()[:24]


def fit(
    model: LoadedModel,
    haystack: str,
    needle: str,
    length: int | None,
    form: nd.Form = "copy",
    question: str | None = None,
    answer: str | None = None,
) -> str:
    """The start of ``haystack`` that keeps the prompt at or under ``length`` tokens, cut at a
    sentence boundary (None: the whole text).

    Raises:
        ValueError: a text too short for ``length`` (its length in tokens named), a length too
            small for the needle and the prompt's end.
    """
    if length is None:
        return haystack
    haystack, needle = nd.check_needle(haystack, needle)
    ids, offsets = model.token_offsets(haystack)
    whole = needle_prompt(model, haystack, needle, 0.5, form, question, answer)
    extra = len(model.token_offsets(whole.text)[0]) - len(ids)  # needle and the prompt's end
    keep = int(length) - extra
    if keep < 1:
        raise ValueError(f"A prompt of {length} tokens leaves no room for the text: ask more.")
    if keep >= len(ids):
        raise ValueError(
            f"The text is {len(ids):,} tokens, too short for a prompt of {length:,}: ask for "
            f"lengths up to about {len(ids) + extra:,} or give a longer text."
        )
    end = offsets[keep][0]
    at = max((b for b in nd.boundaries(haystack) if 0 < b <= end), default=end)
    return haystack[:at].rstrip()


def _load(out: Path | MutableMapping | None, key: str) -> RunSummary | None:
    if isinstance(out, Path):
        path = out / f"{key}.npz"
        if not path.exists():
            return None
        with np.load(path) as z:
            length = int(z["sweep_length"])
            return RunSummary(
                int(z["sweep_haystack"]),
                None if length < 0 else length,
                from_arrays(z),
                str(z["sweep_source"]),
            )
    return None if out is None else out.get(key)


def _save(out: Path | MutableMapping | None, key: str, run: RunSummary) -> None:
    if isinstance(out, Path):
        tmp = out / f"{key}.tmp.npz"  # written whole, then renamed: a killed run leaves no half
        arrays = to_arrays(run.result)
        arrays["sweep_haystack"] = np.asarray(run.haystack)
        arrays["sweep_length"] = np.asarray(-1 if run.length is None else run.length)
        arrays["sweep_source"] = np.asarray(run.source)
        np.savez(tmp, **arrays)
        tmp.replace(out / f"{key}.npz")
    elif out is not None:
        out[key] = run


def retrieval_sweep(
    model: LoadedModel,
    haystacks: Sequence[str],
    needle: str,
    depths: Sequence[float] = (0.5,),
    out: Path | str | MutableMapping | None = None,
    progress: OnFraction | None = None,
    stop: StopToken | None = None,
    *,
    lengths: Sequence[int | None] | None = None,
    prompt: nd.Form = "copy",
    question: str | None = None,
    answer: str | None = None,
    only_found: bool = False,
) -> RetrievalSweep:
    """One ``run.one_run`` per (haystack, length, depth), kept in ``out`` as each ends.

    Args:
        haystacks: texts to hide the needle in; depths: where (0 = start, 1 = end).
        out: a folder or a mapping that keeps finished runs (None: nothing kept).
        progress: called with the fraction done (runs weighted by their text's length);
            stop: once set, the sweep ends (``Cancelled``) and the runs finished stay in ``out``.
        lengths: prompt lengths in tokens, each text cut to fit (``fit``); None: whole texts.
        prompt, question, answer: the prompt's form (``run.one_run``).
        only_found: the means count only the runs that found the needle (Wu et al.'s choice).

    Returns:
        A ``RetrievalSweep``: ``.table`` (each head's mean), ``.scores()`` (per cell),
        ``.cell(depth, length)`` (the runs, each with what its map needs).

    Raises:
        ValueError: no haystack, depth or length, or what one run raises (checked for every
            text, length and depth before the first run, so a bad one fails at once).
    """
    texts, where = list(haystacks), [float(d) for d in depths]
    sizes = [None] if lengths is None else [None if n is None else int(n) for n in lengths]
    if not texts or not where or not sizes:
        raise ValueError("Give at least one haystack, one depth and one length.")
    if isinstance(out, str):
        out = Path(out)
    if isinstance(out, Path):
        out.mkdir(parents=True, exist_ok=True)
    sources = [text_hash(t) for t in texts]
    how = (prompt, question or "", answer or "")
    jobs = []  # bad input fails before any long run
    for n in sizes:
        for i, text in enumerate(texts):
            cut = fit(model, text, needle, n, prompt, question, answer)
            for d in where:
                prepare(model, cut, needle, d, prompt, question, answer)
                jobs.append((n, i, cut, d))
    report = with_stop(progress, stop)
    weights = np.cumsum([0, *(len(cut) for _, _, cut, _ in jobs)]) / sum(len(j[2]) for j in jobs)
    runs = []
    for k, (n, i, cut, d) in enumerate(jobs):
        key = run_key(model, cut, needle, d, *how)
        run = _load(out, key)
        if run is None:
            lo, hi = weights[k], weights[k + 1]
            inner = None if report is None else (lambda f, lo=lo, hi=hi: report(lo + (hi - lo) * f))
            r = one_run(
                model, cut, needle, d, inner, stop, prompt=prompt, question=question, answer=answer
            )
            run = RunSummary(i, n, r.without_trace(), sources[i])
            del r  # its trace (every layer's queries and keys) must not live into the next run
            _save(out, key, run)
        elif (run.haystack, run.source) != (i, sources[i]):
            # kept under another order of the texts: its key is that of this text, cut
            run = replace(run, haystack=i, source=sources[i])
        runs.append(run)
        if report is not None:
            report(float(weights[k + 1]))
    return RetrievalSweep(
        " ".join(needle.split()),
        tuple(runs),
        depths=tuple(where),
        lengths=tuple(sizes),
        form=prompt,
        only_found=only_found,
    )
