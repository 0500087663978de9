"""Labels of tokens that are alternatives or predictions rather than a sequence: each one read
after the token it would follow, so "continues a word" ("##") is judged against that token."""

from __future__ import annotations

from collections.abc import Callable, Sequence


def labels_after(
    label: Callable[[list[int]], Sequence[str]],
    before: Sequence[int | None],
    ids: Sequence[int],
) -> tuple[str, ...]:
    """Display strings of ``ids``, each read after ``before`` at the same position.

    Args:
        label: labels a sequence of ids (a model's ``output_tokens``), where a piece's look may
            depend on the piece before it.
        before: for each id, the id it follows (the input at a position, the prefix's last id
            for the candidates of one step); None where it follows no id (a start symbol): then
            it is read alone, each apart from the others (the first step's candidates).
        ids: the predictions or candidates.

    Returns:
        One label per id, in order.
    """
    pairs = [i for b, p in zip(before, ids, strict=True) if b is not None for i in (b, p)]
    after = iter(label(pairs)[1::2])
    alone = iter([label([p])[0] for b, p in zip(before, ids, strict=True) if b is None])
    return tuple(next(alone) if b is None else next(after) for b in before)
