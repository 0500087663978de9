"""The "Heads across a corpus" page: Run computes in the background and the results draw (grids
per kind, a head's distribution, top sentences linking to the Attention maps page); a second
session reads the cache without running; two sessions share one job."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import viz_transformer as vt
from viz_transformer.analysis.corpus import head_page
from viz_transformer.analysis.corpus.api import cache_folder
from viz_transformer.models.registry import load_model
from viz_transformer.text import corpora
from viz_transformer.ui import corpus_jobs

PAGE = "pages/heads_across_corpus.py"
SENTENCES = (
    "I like tea.",
    "The old man sells fresh bread at the market every morning.",
    "Where is the station?",
    "She reads.",
    "We walked by the river after the rain.",
)


@pytest.fixture
def small_corpus(monkeypatch, tmp_path):
    """The built-in corpus cut to five sentences, statistics cached under ``tmp_path``."""
    monkeypatch.setenv("VT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(corpora, "builtin_sentences", lambda name="": SENTENCES)
    return cache_folder(load_model("paper-en-pt"), SENTENCES)


def test_run_draws_grids_distribution_and_links_and_a_second_visit_reads_the_cache(
    open_page, figures, small_corpus, monkeypatch
) -> None:
    model, gate = load_model("paper-en-pt"), threading.Event()
    real = model.batch_patterns
    monkeypatch.setattr(model, "batch_patterns", lambda texts: gate.wait(60) and real(texts))
    app = open_page(PAGE)
    assert any("Press Run" in i.value for i in app.info)
    app.button(key="corpus_run").click().run()
    job = corpus_jobs.job(small_corpus)
    assert job is not None and job.running  # held at its first batch by the gate
    assert corpus_jobs.start(model, SENTENCES, small_corpus) is job  # another session joins it
    assert not app.exception
    gate.set()
    job.thread.join(60)
    app.run()
    assert not app.exception and not app.error
    titles = [f["layout"]["title"]["text"] for f in figures(app)]
    assert titles[:3] == ["Encoder self-attention", "Decoder masked self-attention",
                          "Encoder-decoder (cross) attention"]  # fmt: skip
    assert any("5 sentences" in t for t in titles)  # the picked head's distribution
    links = " ".join(m.value for m in app.markdown)
    assert "](attention_maps?model=paper-en-pt&sentence=" in links and "&layer=" in links
    corpus_jobs._JOBS.clear()  # a new server process: only the files remain
    later = open_page(PAGE)
    assert corpus_jobs.job(small_corpus) is None  # nothing ran
    assert len(figures(later)) == len(figures(app)) and not later.info
    later.toggle(key="qk_show").set_value(True).run()
    assert not later.exception and not later.error
    scatter = figures(later)[-1]
    assert scatter["layout"]["title"]["text"].startswith("Queries and keys of")
    assert {t["name"] for t in scatter["data"]} == {"query", "key"}


def test_a_corpus_the_model_cannot_read_gets_a_message_not_a_traceback(
    open_page, small_corpus
) -> None:
    app = open_page(PAGE, model="paper-reverse")  # a toy vocabulary: English is unknown to it
    app.button(key="corpus_run").click().run()
    folder = cache_folder(load_model("paper-reverse"), SENTENCES)
    corpus_jobs.job(folder).thread.join(60)
    app.run()
    assert not app.exception
    assert len(app.error) == 1 and "does not know" in app.error[0].value and not app.info


def test_stop_keeps_every_finished_batch_shows_them_and_run_resumes_from_them(
    open_page, figures, small_corpus, monkeypatch
) -> None:
    """Stop sets the job's token: the batch in flight finishes and is kept (a shard per batch),
    the thread ends; the page draws the finished sentences' statistics and says so; Run computes
    only the rest."""
    monkeypatch.setattr(corpus_jobs, "BATCH", 1)
    model, gate, batches = load_model("paper-en-pt"), threading.Semaphore(0), []
    real = model.batch_patterns

    def gated(texts):
        assert gate.acquire(timeout=60)
        batches.append(len(texts))
        return real(texts)

    monkeypatch.setattr(model, "batch_patterns", gated)
    app = open_page(PAGE)
    app.button(key="corpus_run").click().run()
    job = corpus_jobs.job(small_corpus)
    gate.release()  # one batch, then the run waits in the second
    for _ in range(600):
        if job.progress.done >= 1 and list(small_corpus.glob("shard-*")):
            break
        threading.Event().wait(0.05)
    app.run()
    bar = app.get("progress")[0].proto
    assert "1/5 sentences" in bar.text and bar.value == 20  # percent
    assert any("1 sentences finished" in c.value for c in app.caption)  # drawn while running
    assert len(figures(app)) >= 3  # the grids of the first batch already
    app.button(key="corpus_stop").click().run()
    assert job.stop.is_set() and job.running
    gate.release()  # the batch in flight ends; the run stops there
    job.thread.join(5)
    assert not job.running and batches == [1, 1] and not job.error
    app.run()
    assert not app.exception and len(list(small_corpus.glob("shard-*"))) == 2
    note = " ".join(i.value for i in app.info)
    assert "Stopped after 2 of 5 sentences" in note and "from sentence 3" in note
    gate.release(5)
    app.button(key="corpus_run").click().run()
    corpus_jobs.job(small_corpus).thread.join(60)
    assert len(batches) == 5 and len(list(small_corpus.glob("shard-*"))) == 5  # 3 more only


def test_the_statistic_and_head_come_back_from_a_link(open_page, small_corpus) -> None:
    corpus_jobs.start(load_model("paper-en-pt"), SENTENCES, small_corpus).thread.join(60)
    params = {"corpus_stat": "prev_token", "corpus_head": "cross/1/3", "corpus_source": "built-in"}
    app = open_page(PAGE, params=params)
    assert not app.exception and not app.error
    assert app.selectbox(key="corpus_stat").value == "prev_token"
    assert any("Showing cross attention L1 H3" in c.value for c in app.caption)
    assert any("cross attention L1 H3: prev_token" in h.value for h in app.subheader)
    assert app.query_params["corpus_head"] in ("cross/1/3", ["cross/1/3"])
    app = open_page(PAGE, params={"corpus_head": "cross/9/9"})  # no such head: the first row
    assert not app.exception and app.session_state["corpus_head"] != "cross/9/9"


def test_the_heads_page_draws_levels_the_head_among_all_and_its_pass(
    open_page, figures, decode_array, small_corpus
) -> None:
    corpus_jobs.start(load_model("paper-en-pt"), SENTENCES, small_corpus).thread.join(60)
    app = open_page(PAGE, params={"corpus_stat": "entropy", "corpus_head": "cross/1/3"})
    assert not app.exception and not app.error
    text = " ".join(m.value for m in app.markdown)
    for level in ("Highest entropy", "Around the median entropy", "Lowest entropy"):
        assert level in text
    assert text.count("](attention_maps?model=paper-en-pt") == 5  # each sentence once, linked
    by_title = {f["layout"]["title"]["text"]: f for f in figures(app)}
    strip = by_title["cross attention L1 H3 (red diamond) and every head"]
    marked = [t for t in strip["data"] if t["name"] == "this head"]
    assert len(marked) == 5  # one per statistic; prev_token and diagonal: self-attention only
    assert [t.get("customdata") or [] for t in marked] == [[["cross", 1, 3]]] * 3 + [[]] * 2
    for others in [t for t in strip["data"] if t["name"] == "other heads"][3:]:
        assert all(kind != "cross" for kind, _, _ in others["customdata"])
    assert any("cross-attention heads are not in those strips" in c.value for c in app.caption)
    traces = [vt.trace(load_model("paper-en-pt"), s) for s in SENTENCES]
    want = head_page.head_pass(traces, "cross", 1, 3)
    pairs = next(f for t, f in by_title.items() if t.startswith("Most attended token pairs"))
    np.testing.assert_allclose(
        decode_array(pairs["data"][0]["x"]), want.pairs["share"].head(15).to_numpy()[::-1]
    )
    # a cross head's queries and keys are positions of two sentences: no distances, a reason
    assert not any(t.startswith("Distances") for t in by_title)
    assert any("No query-key distances for cross-attention" in i.value for i in app.info)
    app = open_page(PAGE, params={"corpus_stat": "entropy", "corpus_head": "decoder/1/3"})
    assert not app.exception and not app.error  # the sample's traces are kept: no second pass
    by_title = {f["layout"]["title"]["text"]: f for f in figures(app)}
    distances = next(f for t, f in by_title.items() if t.startswith("Distances"))
    want = head_page.head_pass(traces, "decoder", 1, 3)
    np.testing.assert_allclose(decode_array(distances["data"][0]["y"]), want.mass, rtol=1e-6)


def test_a_level_link_keeps_presenter_mode(open_page, small_corpus) -> None:
    """The sentences' links open Attention maps in a new tab, a new session: presenter mode must
    travel in the link or the projector's view falls back to small text."""
    corpus_jobs.start(load_model("paper-en-pt"), SENTENCES, small_corpus).thread.join(60)
    params = {"corpus_stat": "entropy", "corpus_head": "encoder/1/3"}
    app = open_page(PAGE, params={**params, "presenter": "True"})
    links = [m.value for m in app.markdown if "](attention_maps?" in m.value]
    assert links and all("&presenter=True)" in line for m in links for line in m.splitlines()
                         if "](attention_maps?" in line)  # fmt: skip
    app = open_page(PAGE, params=params)
    assert not any("presenter=" in m.value for m in app.markdown if "](attention_maps?" in m.value)


def test_a_long_sentence_is_cut_at_a_word_with_an_ellipsis() -> None:
    from pages.sections.heads_across_corpus.corpus_head import shortened

    long = "The quick brown fox jumps over the lazy dog " * 3
    assert shortened(long, 30) == "The quick brown fox jumps…"
    assert shortened("Short enough.", 30) == "Short enough."
