"""Retrieval heads over several depths and haystacks: one needle run per (haystack, depth), each
head's mean and spread over the runs; resumable and stoppable like the corpus statistics.

Each finished run is kept in ``out`` as soon as it ends: a folder (one ``.npz`` file per run, named
by a hash of the model's weights, the haystack, the needle and the depth) or a mapping (the app
keeps one per job). A run found there is not run again, so a stopped or killed sweep started again
computes only what is missing. Stop: between two runs and at every progress point of a run
(``Cancelled``); the runs kept stay.
"""

from __future__ import annotations

import hashlib
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from viz_transformer.analysis.retrieval.run import retrieval_heads
from viz_transformer.models.base import LoadedModel
from viz_transformer.records.progress import OnFraction, StopToken, with_stop

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class RunSummary:
    """What a sweep keeps of one run: where the needle was, whether it was copied, the scores."""

    haystack: int  # index into the haystacks
    depth: float
    found: bool
    aligned: bool
    output: str
    retrieval: np.ndarray  # [layers, heads]
    sink: np.ndarray


@dataclass(frozen=True)
class RetrievalSweep:
    """Runs of one needle at several depths and haystacks, and their mean and spread per head."""

    needle: str
    runs: tuple[RunSummary, ...]

    @property
    def found(self) -> float:
        """The fraction of runs whose output holds the needle's second half."""
        return float(np.mean([r.found for r in self.runs])) if self.runs else 0.0

    @property
    def table(self) -> pd.DataFrame:
        """Per query head: ``layer, head, retrieval, retrieval_std, sink, sink_std, runs``
        (means and population standard deviations over the runs), retrieval descending."""
        import pandas as pd

        r = np.stack([run.retrieval for run in self.runs])  # (runs, layers, heads)
        s = np.stack([run.sink for run in self.runs])
        layers, heads = np.indices(r.shape[1:])
        df = pd.DataFrame(
            {
                "layer": layers.ravel(),
                "head": heads.ravel(),
                "retrieval": r.mean(0).ravel(),
                "retrieval_std": r.std(0).ravel(),
                "sink": s.mean(0).ravel(),
                "sink_std": s.std(0).ravel(),
                "runs": len(self.runs),
            }
        )
        return df.sort_values(
            ["retrieval", "layer", "head"],
            ascending=[False, True, True],
            kind="stable",
            ignore_index=True,
        )


def run_key(model: LoadedModel, haystack: str, needle: str, depth: float) -> str:
    """A name for one run: the same weights, texts and depth always give the same key."""
    from viz_transformer.analysis.corpus.api import model_hash

    h = hashlib.sha256()
    for part in (model.name, model_hash(model), haystack, needle, f"{float(depth):.6f}"):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _load(out: Path | MutableMapping | None, key: str) -> RunSummary | None:
    if isinstance(out, Path):
        path = out / f"{key}.npz"
        if not path.exists():
            return None
        with np.load(path) as z:
            return RunSummary(
                int(z["haystack"]),
                float(z["depth"]),
                bool(z["found"]),
                bool(z["aligned"]),
                str(z["output"]),
                z["retrieval"],
                z["sink"],
            )
    return None if out is None else out.get(key)


def _save(out: Path | MutableMapping | None, key: str, run: RunSummary) -> None:
    if isinstance(out, Path):
        tmp = out / f"{key}.tmp.npz"  # written whole, then renamed: a killed run leaves no half
        np.savez(tmp, **{k: np.asarray(v) for k, v in vars(run).items()})
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
) -> RetrievalSweep:
    """One ``retrieval_heads`` run per (haystack, depth), kept in ``out`` as each ends.

    Args:
        haystacks: texts to hide the needle in; depths: where (0 = start, 1 = end).
        out: a folder or a mapping that keeps finished runs (None: nothing kept).
        progress: called with the fraction of runs done; stop: once set, the sweep ends
            (``Cancelled``) and the runs finished stay in ``out``.

    Raises:
        ValueError: no haystack or depth, or what one run raises (checked for every
            haystack and depth before the first run, so a bad one fails at once).
    """
    texts, where = list(haystacks), [float(d) for d in depths]
    if not texts or not where:
        raise ValueError("Give at least one haystack and one depth.")
    if isinstance(out, str):
        out = Path(out)
    if isinstance(out, Path):
        out.mkdir(parents=True, exist_ok=True)
    from viz_transformer.analysis.retrieval.run import prepare

    for text in texts:  # bad input fails before any long run
        for d in where:
            prepare(model, text, needle, d)
    report = with_stop(progress, stop)
    jobs = [(i, d) for i in range(len(texts)) for d in where]
    runs = []
    for n, (i, d) in enumerate(jobs):
        key = run_key(model, texts[i], needle, d)
        run = _load(out, key)
        if run is None:
            inner = None if report is None else (lambda f, n=n: report((n + f) / len(jobs)))
            r = retrieval_heads(model, texts[i], needle, d, inner)
            run = RunSummary(i, d, r.found, r.aligned, r.output, r.retrieval, r.sink)
            _save(out, key, run)
        runs.append(run)
        if report is not None:
            report((n + 1) / len(jobs))
    return RetrievalSweep(" ".join(needle.split()), tuple(runs))
