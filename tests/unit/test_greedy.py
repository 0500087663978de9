"""The one batched greedy decoder: finished rows leave the batch, a batch of sources of very
different lengths gives each source's own greedy output, and ``on_step`` reports every step to
this thread's callback alone, which may stop the decoding between two tokens."""

from __future__ import annotations

import threading

import pytest
import torch

import viz_transformer as vt
from viz_transformer.models.paper import PaperModel
from viz_transformer.networks.greedy import greedy_loop, on_step
from viz_transformer.networks.paper_decode import greedy_batch
from viz_transformer.testing.paper import tiny_paper_model

EOS = 0
CPU = torch.device("cpu")  # the synthetic steps below are no model


def test_finished_rows_leave_the_batch_and_outputs_keep_input_order():
    # row r emits its own id (r + 1) until step r, then the end id; row 3 never ends
    ends_at = torch.tensor([2, 0, 5, 99], device=CPU)
    seen: list[list[int]] = []

    def step(prev, rows):
        live, t = rows
        seen.append(live.tolist())
        ids = torch.where(ends_at[live] == t, EOS, live + 1)
        return torch.nn.functional.one_hot(ids, 10).float(), (live, t + 1)

    def select(rows, keep):
        return rows[0][keep], rows[1]

    outs = greedy_loop(step, select, (torch.arange(4, device=CPU), 0), 4, EOS, 7, CPU)
    assert outs == [[1, 1, EOS], [EOS], [3, 3, 3, 3, 3, EOS], [4] * 7]
    assert seen == [[0, 1, 2, 3], [0, 2, 3], [0, 2, 3], [2, 3], [2, 3], [2, 3], [3]]


def test_several_end_ids_and_a_shortlist_of_columns():
    columns = torch.tensor([3, 7, 9], device=CPU)  # the logits' columns are these ids

    def step(prev, n):
        col = 0 if n == 0 else 2 if n == 1 else 1  # ids 3, 9, then 7
        return torch.nn.functional.one_hot(torch.tensor([col], device=CPU), 3).float(), n + 1

    outs = greedy_loop(step, lambda s, k: s, 0, 1, {7, 9}, 5, CPU, columns=columns)
    assert outs == [[3, 9]]


# paper-en-pt's batch against its traces: tests/integration/test_compare.py (greedy_outputs)
@pytest.mark.parametrize("which", ["tiny", "paper-reverse"])
def test_a_batch_of_very_different_lengths_equals_one_by_one(which):
    model: PaperModel = (
        tiny_paper_model(seed=3, max_len=32) if which == "tiny" else vt.load_model(which)
    )
    vocab, words = model.vocab, model.spec.example.split()
    texts = [words[0], " ".join(words * 3), " ".join(words[::-1]), " ".join(words[:2])]
    sources = [vocab.encode(t) for t in texts]
    assert len({len(s) for s in sources}) == len(sources)  # every length differs
    ids = {"pad_id": vocab.pad_id, "bos_id": vocab.bos_id, "eos_id": vocab.eos_id}
    together = greedy_batch(model.module, sources, 30, **ids)
    alone = [greedy_batch(model.module, [s], 30, **ids)[0] for s in sources]
    assert together == alone
    if which == "tiny":  # random weights: no row ends, every step runs the whole batch
        return
    assert len({len(o) for o in together}) > 1  # rows really ended at different steps
    for text, out in zip(texts, together, strict=True):  # and each is what its trace decodes
        n_out = len(vt.trace(model, text).tgt_tokens) - 1  # <s> then the outputs
        assert n_out == len([i for i in out if i != vocab.eos_id])


def _count_up(prev, n):
    """A synthetic step: id n + 1 at step n (never the end id)."""
    return torch.nn.functional.one_hot(torch.tensor([n + 1], device=CPU), 10).float(), n + 1


def test_on_step_reports_each_step_once_with_increasing_counts():
    seen: list[tuple[int, int]] = []
    with on_step(lambda done, max_new: seen.append((done, max_new))):
        (out,) = greedy_loop(_count_up, lambda s, k: s, 0, 1, EOS, 6, CPU)
        ended = greedy_loop(lambda p, n: (torch.eye(3, device=CPU)[[2 * (n > 0)]], n + 1),
                            lambda s, k: s, 0, 1, 2, 6, CPU)  # fmt: skip
    assert out == [1, 2, 3, 4, 5, 6] and ended == [[0, 2]]
    # the second loop counts from 1 again and stops reporting where it ends (its end id)
    assert seen == [(i, 6) for i in range(1, 7)] + [(1, 6), (2, 6)]
    greedy_loop(_count_up, lambda s, k: s, 0, 1, EOS, 3, CPU)  # the block closed: none reported
    assert len(seen) == 8


class _Stop(Exception):
    pass


def test_a_raising_callback_stops_an_ablated_decode_and_leaves_the_model_clean(tiny, same_trace):
    plain = vt.trace(tiny, "alpha beta gamma")
    steps: list[int] = []

    def stop_at_3(done: int, max_new: int) -> None:
        steps.append(done)
        if steps.count(1) == 2 and done == 3:  # the second loop: the mean's clean decode first
            raise _Stop

    heads = [("cross", 0, 1), ("decoder", 1, 0)]
    with pytest.raises(_Stop), tiny.stepping(stop_at_3):
        vt.trace(tiny, "alpha beta gamma", ablate=heads, ablation="mean")
    assert steps.count(1) == 2 and steps[-3:] == [1, 2, 3]  # the ablated decode ended at its 3rd
    count = len(steps)
    # no hook and no callback left behind: the plain trace again, bit for bit
    assert same_trace(vt.trace(tiny, "alpha beta gamma"), plain)
    assert len(steps) == count


def test_each_thread_sees_only_its_own_step_callback():
    both_inside = threading.Barrier(2)
    seen: dict[str, list[int]] = {"a": [], "b": []}

    def decode(name: str, max_new: int) -> None:
        with on_step(lambda done, _max: seen[name].append(done)):
            both_inside.wait(timeout=10)  # both callbacks set before either thread decodes
            greedy_loop(_count_up, lambda s, k: s, 0, 1, EOS, max_new, CPU)
            both_inside.wait(timeout=10)

    threads = [threading.Thread(target=decode, args=a) for a in (("a", 3), ("b", 5))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert seen == {"a": [1, 2, 3], "b": [1, 2, 3, 4, 5]}
