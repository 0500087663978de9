"""``vt.corpus_stats`` end to end: a padded batch equals each sentence's own trace, a run killed
with SIGKILL resumes to the same table, a finished folder is read at once and computed once, the
command line refuses bad input in one line, the Ray engine writes the local engine's table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import viz_transformer as vt
from viz_transformer.analysis.corpus.stats import STATS, pattern_stats
from viz_transformer.cli.corpus import main
from viz_transformer.models import paper_batch
from viz_transformer.testing.paper import TINY_WORDS, tiny_paper_model

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["alpha", " ".join(TINY_WORDS + TINY_WORDS[:4]), "beta gamma", "kappa iota theta eta"]
WORDS = ["happy", "king", "red", "ship", "blue", "sea", "tree", "moon", "star", "river", "road",
         "snow", "wind", "song"]  # fmt: skip


def child_env() -> dict[str, str]:
    """The environment of a child Python: this one's, with the repository added to PYTHONPATH
    (not put in its place: a machine may carry packages on it)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}


def reverse_corpus(n: int) -> list[str]:
    """``n`` sentences paper-reverse reads, 2 to 9 words."""
    return [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(2 + i % 8)) for i in range(n)]


def direct_rows(model: vt.LoadedModel, texts: list[str]) -> pd.DataFrame:
    """The table computed from ``vt.trace`` of each sentence alone, one pattern at a time."""
    rows = []
    for sid, text in enumerate(texts):
        tr = vt.trace(model, text)
        for kind in vt.KINDS:
            arr = tr.get(kind)
            if arr is None:
                continue
            for layer in range(arr.shape[0]):
                for head in range(arr.shape[1]):
                    P = np.asarray(arr[layer, head])[None, None, None]  # (1, 1, 1, q, k)
                    q, k = P.shape[-2:]
                    stats = pattern_stats(P, np.array([q]), np.array([k]))[0, 0, 0]
                    rows.append((sid, kind, layer, head, q, *stats))
    cols = ["sentence_id", "kind", "layer", "head", "n_rows", *STATS]
    return pd.DataFrame(rows, columns=cols).sort_values(cols[:4]).reset_index(drop=True)


def assert_same_table(a: pd.DataFrame, b: pd.DataFrame, atol: float = 1e-5) -> None:
    keys = ["sentence_id", "kind", "layer", "head", "n_rows"]
    assert a[keys].astype(str).equals(b[keys].astype(str))
    np.testing.assert_allclose(a[list(STATS)], b[list(STATS)], atol=atol, equal_nan=True)


def test_a_padded_batch_equals_each_sentence_traced_alone(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(paper_batch, "ROWS", 3)  # the decoder read in two passes of 3 and 1 rows
    model = vt.load_model("paper-reverse")  # trained: its outputs are as long as its inputs
    texts = ["king", " ".join(WORDS * 2), "red ship", " ".join(WORDS[:7])]  # 1 to 28 words
    batch = model.batch_patterns(texts)
    for b, text in enumerate(texts):
        tr = vt.trace(model, text)
        for kind in ("encoder", "decoder", "cross"):
            q, k = batch.q_lens[kind][b], batch.k_lens[kind][b]
            got = batch.patterns[kind][:, b, :, :q, :k]
            np.testing.assert_allclose(got, tr.get(kind), atol=1e-5, err_msg=f"{text}: {kind}")
    assert len(set(batch.q_lens["decoder"])) == len(set(batch.k_lens["encoder"])) == 4
    df = vt.corpus_stats(model, texts, tmp_path / "s", batch_size=4)
    assert_same_table(df, direct_rows(model, texts))
    assert df.equals(vt.read_corpus_stats(tmp_path / "s"))


def test_the_generic_path_of_another_family_gives_the_same_table(load_tiny, tmp_path) -> None:
    model = load_tiny("bert")  # Hugging Face: one trace per sentence
    texts = ["the cat sat", "a much longer sentence with many more words in it than that"]
    df = vt.corpus_stats(model, texts, tmp_path / "s", batch_size=2)
    assert set(df["kind"]) == {"encoder"}
    assert_same_table(df, direct_rows(model, texts))


def test_a_finished_folder_is_read_at_once_and_concurrent_runs_compute_it_once(tmp_path) -> None:
    model = tiny_paper_model(max_len=12)
    calls = []
    real = model.batch_patterns
    model.batch_patterns = lambda texts: calls.append(len(texts)) or real(texts)  # type: ignore[method-assign]
    out = tmp_path / "s"
    results: list[pd.DataFrame] = []
    runs = [
        threading.Thread(target=lambda: results.append(vt.corpus_stats(model, TEXTS, out)))
        for _ in range(2)
    ]
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    assert sum(calls) == len(TEXTS)  # the second run waited and read the first one's shards
    assert results[0].equals(results[1])
    model.batch_patterns = None  # type: ignore[assignment,method-assign]  # a hit runs nothing
    assert vt.corpus_stats(model, TEXTS, out).equals(results[0])
    summary = vt.head_summary(results[0])
    assert len(summary) == 3 * 2 * 2 and (summary["n_rows"] > 0).all()


KILLABLE = """
import sys, time
import viz_transformer as vt
sents = [l for l in open(sys.argv[1]).read().splitlines() if l]
vt.corpus_stats("paper-reverse", sents, sys.argv[2], batch_size=2, shard_size=4,
                progress=lambda done, total: time.sleep(0.15))
"""


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_to_the_uninterrupted_table(tmp_path) -> None:
    texts = reverse_corpus(24)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(texts))
    out = tmp_path / "killed"
    log = tmp_path / "child.log"
    with log.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", KILLABLE, str(corpus), str(out)],
                                env=child_env(), stderr=err)  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(out.glob("shard-*.parquet"))) < 2 and time.monotonic() < deadline:
        if proc.poll() is not None:  # it died: say why now, not after the deadline
            pytest.fail(f"the run ended by itself (exit {proc.returncode}): {log.read_text()}")
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = sorted(out.glob("shard-*.parquet"))
    assert 2 <= len(kept) < 6, "the run was to be killed half-way"
    before = {p.name: p.stat().st_mtime_ns for p in kept}
    assert main(["--model", "paper-reverse", "--sentences", str(corpus), "--out", str(out),
                 "--batch-size", "3"]) == 0  # fmt: skip
    assert {p.name: p.stat().st_mtime_ns for p in kept} == before  # only the missing ones ran
    whole = vt.corpus_stats("paper-reverse", texts, tmp_path / "whole", shard_size=4)
    assert_same_table(vt.read_corpus_stats(out), whole)
    assert len(whole) == 24 * 3 * 2 * 4  # paper-reverse: 2 + 2 layers of 4 heads


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err.strip()


@pytest.mark.slow
def test_the_command_refuses_bad_input_in_one_line(tmp_path, capsys) -> None:
    good = tmp_path / "good.txt"
    good.write_text("happy king\n\nred ship blue\n")
    out = tmp_path / "out"
    ok, _ = run_cli(capsys, "--model", "paper-reverse", "--sentences", str(good), "--out", str(out))
    assert ok == 0 and len(vt.read_corpus_stats(out)) == 2 * 3 * 2 * 4
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "bin.txt").write_bytes(bytes(range(256)))
    (tmp_path / "other.txt").write_text("king\n")
    cases = {
        "empty": ("paper-reverse", "empty.txt", "x"),
        "binary": ("paper-reverse", "bin.txt", "x"),
        "unknown model": ("no-such-model", "good.txt", "x"),
        "another model's": ("paper-sov", "good.txt", "out"),
        "another corpus's": ("paper-reverse", "other.txt", "out"),
    }
    for what, (model, file, folder) in cases.items():
        code, err = run_cli(capsys, "--model", model, "--sentences", str(tmp_path / file),
                            "--out", str(tmp_path / folder))  # fmt: skip
        assert code != 0, what
        assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    assert len(vt.read_corpus_stats(out)) == 2 * 3 * 2 * 4  # nothing computed was lost
    done = subprocess.run(
        [sys.executable, "-m", "viz_transformer", "corpus", "--model", "nope", "--sentences",
         str(good), "--out", str(tmp_path / "y")],
        capture_output=True, text=True, env=child_env(),
        check=False,
    )  # fmt: skip
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "unknown model" in done.stderr


@pytest.mark.needs("ray")
@pytest.mark.slow
def test_ray_computes_the_same_table_as_the_local_engine(tmp_path) -> None:
    import ray  # requirements-cluster.txt: CI installs it; the app never imports it

    texts = reverse_corpus(10)
    local = vt.corpus_stats("paper-reverse", texts, tmp_path / "local", shard_size=3)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)  # a local cluster
    try:
        seen = []
        far = vt.corpus_stats("paper-reverse", texts, tmp_path / "ray", engine="ray",
                              shard_size=3, progress=lambda d, t: seen.append(d))  # fmt: skip
    finally:
        ray.shutdown()
    assert_same_table(far, local)
    assert seen[-1] == 10 and sorted(seen) == seen
    assert len(list((tmp_path / "ray").glob("shard-*.parquet"))) == 4


def test_stop_keeps_the_finished_shards_and_run_again_completes_them(tmp_path) -> None:
    model, stop = tiny_paper_model(max_len=12), vt.StopToken()
    texts = [" ".join(TINY_WORDS[: 1 + i % 9]) for i in range(12)]
    partial = vt.corpus_stats(
        model, texts, tmp_path / "s", batch_size=2, shard_size=4, stop=stop,
        progress=lambda done, total: done >= 5 and stop.set(),
    )  # fmt: skip
    assert sorted(partial["sentence_id"].unique()) == [0, 1, 2, 3]  # shard 1 stopped half-way
    whole = vt.corpus_stats(model, texts, tmp_path / "s", batch_size=2, shard_size=4)
    assert whole["sentence_id"].nunique() == 12
    assert_same_table(whole, vt.corpus_stats(model, texts, tmp_path / "t", batch_size=5))
