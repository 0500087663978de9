"""What a retrieval sweep returns: its runs, one per (haystack, length, depth), and each head's
score per (depth, length) cell, the picture of Wu et al.'s heads across depth and length.

``only_found`` (Wu et al.'s choice: their code adds a run's scores only when the output's ROUGE-1
recall of the needle is above 0.5) makes every mean count only the runs whose needle was found;
without it every run counts, a run the model failed included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from viz_transformer.analysis.retrieval.result import COUNTING, FLAG, RetrievalResult

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class RunSummary:
    """One run of a sweep.

    Attributes:
        haystack: the index of its text in the sweep's haystacks (found from the text's hash
            when a kept run is read back, so another order of the texts still names it right).
        length: the prompt length asked in tokens (None: the whole text).
        result: the run (``RetrievalResult`` without its trace): its prompt and output
            (``.text`` is what its map shows), needle and answer positions, every head's score
            and ``copy_step(layer, head)``, where a map zooms on the needle.
        source: SHA-256 of the haystack as given (before the cut to ``length``).
    """

    haystack: int
    length: int | None
    result: RetrievalResult
    source: str = ""

    @property
    def depth(self) -> float:
        return self.result.depth

    @property
    def found(self) -> bool:
        return self.result.found

    @property
    def aligned(self) -> bool:
        return self.result.aligned

    @property
    def output(self) -> str:
        return self.result.output

    @property
    def retrieval(self) -> np.ndarray:
        return self.result.retrieval

    @property
    def sink(self) -> np.ndarray:
        return self.result.sink


@dataclass(frozen=True)
class RetrievalSweep:
    """Runs of one needle at several depths, lengths and haystacks, their means per head, and
    each (depth, length) cell's scores.

    Attributes:
        needle: the needle; form: the prompt's form (``"copy"``, ``"question"``).
        runs: every run, in the order run (lengths, then haystacks, then depths).
        depths, lengths: the grid's axes as asked (a length None: each whole text).
        only_found: means count only the runs whose needle was found (Wu et al.'s choice).
        threshold: the mean retrieval a head needs to count as a retrieval head.
    """

    needle: str
    runs: tuple[RunSummary, ...]
    depths: tuple[float, ...] = ()
    lengths: tuple[int | None, ...] = (None,)
    form: str = "copy"
    only_found: bool = False
    threshold: float = FLAG
    counting: str = COUNTING

    @property
    def found(self) -> float:
        """The fraction of runs whose output holds the answer (ROUGE-1 recall above 0.5)."""
        return float(np.mean([r.found for r in self.runs])) if self.runs else 0.0

    @property
    def counted(self) -> tuple[RunSummary, ...]:
        """The runs the means count: the found ones with ``only_found``, else all."""
        return tuple(r for r in self.runs if r.found or not self.only_found)

    @property
    def mean_retrieval(self) -> np.ndarray:
        """float32 ``[layers, heads]``: each head's mean retrieval over the counted runs (NaN
        where none counts)."""
        return _mean([r.retrieval for r in self.counted], self.runs[0].retrieval.shape)

    @property
    def passed(self) -> int:
        """How many heads' mean retrieval reaches ``threshold``."""
        return int((np.nan_to_num(self.mean_retrieval) >= self.threshold).sum())

    def cell(self, depth: float, length: int | None) -> tuple[RunSummary, ...]:
        """The runs of one (depth, length) cell, every haystack (counted or not)."""
        return tuple(r for r in self.runs if r.depth == float(depth) and r.length == length)

    def scores(self) -> np.ndarray:
        """float32 ``[depths, lengths, layers, heads]``: each head's mean retrieval over the
        cell's counted runs (NaN where none counts), axes in ``depths`` and ``lengths`` order."""
        shape = self.runs[0].retrieval.shape
        out = np.full((len(self.depths), len(self.lengths), *shape), np.nan, np.float32)
        for i, d in enumerate(self.depths):
            for j, n in enumerate(self.lengths):
                kept = [r.retrieval for r in self.cell(d, n) if r.found or not self.only_found]
                out[i, j] = _mean(kept, shape)
        return out

    def found_share(self) -> np.ndarray:
        """float ``[depths, lengths]``: the share of each cell's runs that found the needle."""
        rows = [
            [np.mean([r.found for r in self.cell(d, n)]) for n in self.lengths] for d in self.depths
        ]
        return np.array(rows)

    def prompt_lengths(self) -> np.ndarray:
        """int ``[depths, lengths]``: each cell's mean prompt length in tokens (what a length
        asked gave, after the cut at a sentence boundary)."""

        def mean_length(d: float, n: int | None) -> int:
            return round(np.mean([r.result.prompt_length for r in self.cell(d, n)]))

        return np.array([[mean_length(d, n) for n in self.lengths] for d in self.depths])

    @property
    def table(self) -> pd.DataFrame:
        """Per query head: ``layer, head, retrieval, retrieval_std, sink, sink_std, runs``
        (means and population standard deviations over the counted runs; ``runs`` how many),
        retrieval descending."""
        import pandas as pd

        kept = self.counted
        shape = self.runs[0].retrieval.shape
        r = np.stack([run.retrieval for run in kept]) if kept else np.full((1, *shape), np.nan)
        s = np.stack([run.sink for run in kept]) if kept else np.full((1, *shape), np.nan)
        layers, heads = np.indices(shape)
        df = pd.DataFrame(
            {
                "layer": layers.ravel(),
                "head": heads.ravel(),
                "retrieval": r.mean(0).ravel(),
                "retrieval_std": r.std(0).ravel(),
                "sink": s.mean(0).ravel(),
                "sink_std": s.std(0).ravel(),
                "runs": len(kept),
            }
        )
        return df.sort_values(
            ["retrieval", "layer", "head"],
            ascending=[False, True, True],
            kind="stable",
            ignore_index=True,
        )

    def summary(self) -> str:
        """The sweep in one sentence: runs counted, heads passed, the threshold, found share."""
        counted = len(self.counted)
        rule = "the runs that found the needle" if self.only_found else "every run"
        return (
            f"{len(self.runs)} runs of the {self.form} prompt ({len(self.depths)} depths x "
            f"{len(self.lengths)} lengths), needle found in {self.found:.0%}; the means count "
            f"{rule} ({counted}); {self.passed} of {self.runs[0].retrieval.size} heads reach a "
            f"mean retrieval of {self.threshold:g}."
        )


def _mean(arrays: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    if not arrays:
        return np.full(shape, np.nan, np.float32)
    return np.mean(np.stack(arrays), axis=0).astype(np.float32)
