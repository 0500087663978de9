"""What one needle run returns (``RetrievalResult``), how a sweep keeps it (``to_arrays`` and
``from_arrays``: one ``.npz`` file, no pickle), and which heads two runs or sweeps share
(``compare_forms``: the copy prompt against the question prompt)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from viz_transformer.analysis.retrieval import scores as sc
from viz_transformer.analysis.retrieval.needle import FOUND_AT
from viz_transformer.records.trace import Trace

if TYPE_CHECKING:
    import pandas as pd

FLAG = 0.1  # a head scoring at least this retrieves (Wu et al. 2024 use 0.1)
# how a head's retrieval counts a token the answer holds twice (" a" ... " a")
COUNTING = "distinct answer positions: a token the answer repeats counts once per position it holds"


@dataclass(frozen=True)
class RetrievalResult:
    """One needle run. Positions index the prompt + output tokens (the trace's).

    Attributes:
        prompt, output: the text fed and the greedy continuation (decoded generated ids).
        prompt_tokens, output_tokens: their token labels.
        needle_positions: prompt positions of the inserted needle; answer_positions: those of
            the answer (what the output should repeat: the needle's second half in the copy
            form, the tail the question asks for in the question form), the denominator of
            ``retrieval``.
        retrieval, sink: float32 ``[layers, heads]`` (definitions: ``scores``).
        hits: ``[layers, heads, steps]`` the answer position copied at each output step, or -1.
        rows: the query row of each output step.
        found: ``recall`` above ``found_at``; recall: ROUGE-1 recall of the answer in the output
            (``needle.rouge1_recall``); aligned: prompt + output tokenises back to the generated
            tokens; messages: what the run noticed (misalignment).
        form: the prompt's form (``"copy"`` or ``"question"``), question: the question asked
            ("" in the copy form), answer: the answer's text.
        threshold: the retrieval a head needs to count as a retrieval head (``passed``).
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
    form: str = "copy"
    question: str = ""
    answer: str = ""
    recall: float = 0.0
    found_at: float = FOUND_AT
    threshold: float = FLAG
    counting: str = COUNTING

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

    @property
    def text(self) -> str:
        """Prompt + output as traced: the text whose map shows these positions."""
        from viz_transformer.text.checks import check_text

        return check_text(self.prompt + self.output)

    @property
    def prompt_length(self) -> int:
        """The prompt's tokens (special ones included)."""
        return len(self.prompt_tokens)

    @property
    def copy_distance(self) -> int | None:
        """How far back the copy reaches: tokens from the first output step's query row to the
        answer's first token (None without an answer or an output)."""
        if not self.answer_positions or not len(self.rows):
            return None
        return int(self.rows[0]) - int(self.answer_positions[0])

    @property
    def passed(self) -> int:
        """How many heads reach ``threshold``."""
        return int((self.retrieval >= self.threshold).sum())

    def flagged(self, at_least: float | None = None) -> list[tuple[int, int, float]]:
        """Heads with retrieval >= ``at_least`` (default ``threshold``) as (layer, head, score),
        best first."""
        t = self.table
        t = t[t.retrieval >= (self.threshold if at_least is None else at_least)]
        return [
            (int(a), int(b), float(c))
            for a, b, c in zip(t["layer"], t["head"], t["retrieval"], strict=True)
        ]

    def copy_step(self, layer: int, head: int) -> tuple[int, int] | None:
        """(query row, key position) of the head's first copy, or None if it never copied:
        where its map is zoomed on the needle."""
        step = sc.first_copy(self.hits, layer, head)
        return None if step is None else (int(self.rows[step]), int(self.hits[layer, head, step]))

    def summary(self) -> str:
        """The run in one sentence: heads passed, threshold, prompt length, copy distance,
        whether the needle was found (recall and its threshold), how repeats count."""
        heads = self.retrieval.size
        back = self.copy_distance
        reach = f"the copy reaches {back:,} tokens back" if back is not None else "no copy"
        verdict = "found" if self.found else "not found"
        return (
            f"{self.passed} of {heads} heads reach retrieval {self.threshold:g}; "
            f"{self.form} prompt of {self.prompt_length:,} tokens, {reach}; "
            f"needle {verdict} (ROUGE-1 recall {self.recall:.2f}, found above "
            f"{self.found_at:g}); {len(self.answer_positions)} answer positions, "
            f"{self.counting.split(':')[0]}."
        )

    def without_trace(self) -> RetrievalResult:
        """This result without its trace (what a cache keeps: the trace holds every layer's
        queries and keys)."""
        return replace(self, trace=None)


def to_arrays(result: RetrievalResult) -> dict[str, np.ndarray]:
    """Every field but the trace as numpy arrays (strings as unicode arrays: no pickle)."""
    out: dict[str, np.ndarray] = {}
    for f in fields(result):
        if f.name == "trace":
            continue
        value = getattr(result, f.name)
        if isinstance(value, tuple):
            value = np.asarray(value, dtype=str if f.name.endswith(("tokens", "messages")) else int)
        out[f.name] = np.asarray(value)
    return out


def from_arrays(z: Any) -> RetrievalResult:
    """The result ``to_arrays`` wrote (``z``: a loaded ``.npz`` or that dict)."""
    values: dict[str, Any] = {}
    for f in fields(RetrievalResult):
        if f.name == "trace" or f.name not in z:
            continue
        a = np.asarray(z[f.name])
        if f.name in ("retrieval", "sink", "hits", "rows"):
            values[f.name] = a.copy()
        elif f.name.endswith(("tokens", "messages")):
            values[f.name] = tuple(str(x) for x in a.tolist())
        elif f.name.endswith("positions"):
            values[f.name] = tuple(int(x) for x in a.tolist())
        else:
            values[f.name] = a.item()
    return RetrievalResult(**values)


@dataclass(frozen=True)
class FormComparison:
    """Which heads retrieve under two prompts (``compare_forms``), each list best first by the
    mean of its two scores.

    Attributes:
        first, second: the two prompts' forms (``"copy"``, ``"question"``).
        both: heads at ``threshold`` or above under both; only_first, only_second: under one.
        scores: ``[2, layers, heads]`` the two results' (mean) retrieval.
    """

    first: str
    second: str
    threshold: float
    both: tuple[tuple[int, int], ...]
    only_first: tuple[tuple[int, int], ...]
    only_second: tuple[tuple[int, int], ...]
    scores: np.ndarray

    def summary(self) -> str:
        """The comparison in one sentence."""

        def named(heads: tuple[tuple[int, int], ...]) -> str:
            return ", ".join(f"L{a} H{b}" for a, b in heads) or "none"

        return (
            f"Retrieval {self.threshold:g} or more under both prompts: {named(self.both)}; "
            f"{self.first} only: {named(self.only_first)}; "
            f"{self.second} only: {named(self.only_second)}."
        )


def compare_forms(a: Any, b: Any, threshold: float = FLAG) -> FormComparison:
    """The heads that are retrieval heads under both of two results, and under one only.

    Args:
        a, b: two ``RetrievalResult`` or ``RetrievalSweep`` of the same model (a sweep counts
            each head's mean retrieval over its counted runs), typically the copy and the
            question prompt of one needle.
        threshold: the retrieval a head needs (Wu et al.'s 0.1).

    Raises:
        ValueError: results of models with other head counts.
    """
    sa, sb = (
        np.nan_to_num(x.mean_retrieval if hasattr(x, "runs") else x.retrieval) for x in (a, b)
    )
    if sa.shape != sb.shape:
        raise ValueError(f"The two results have {sa.shape} and {sb.shape} heads: one model's.")
    pa, pb = sa >= threshold, sb >= threshold
    mean = (sa + sb) / 2

    def heads(mask: np.ndarray) -> tuple[tuple[int, int], ...]:
        found = [(int(i), int(j)) for i, j in zip(*np.nonzero(mask), strict=True)]
        return tuple(sorted(found, key=lambda h: (-mean[h], h)))

    return FormComparison(
        getattr(a, "form", "first"),
        getattr(b, "form", "second"),
        float(threshold),
        heads(pa & pb),
        heads(pa & ~pb),
        heads(pb & ~pa),
        np.stack([sa, sb]),
    )
