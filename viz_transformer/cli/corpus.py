"""``python -m viz_transformer corpus``: head statistics of a text file's sentences, resumable.

Prints a progress bar (sentences per second, time left) on stderr and, at the end, where the
table is. Bad input gets one line on stderr and a non-zero exit, never a traceback; shards
already written stay, so running the same command again goes on where it stopped.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from viz_transformer import settings
from viz_transformer.analysis.corpus.api import compute
from viz_transformer.analysis.corpus.shards import ShardStore
from viz_transformer.models.devices import DTYPES
from viz_transformer.records.progress import ProgressMeter
from viz_transformer.text.uploads import read_lines

BAR = 30  # characters of the progress bar


def read_sentences(path: Path) -> list[str]:
    """The non-blank lines of ``path``, stripped (``sentence_id`` = index among them).

    Raises:
        ValueError: a missing, empty or binary file, or one without a line of text.
    """
    if not path.is_file():
        raise ValueError(f"{path} is not a file; give a .txt file with one sentence per line.")
    data = path.read_bytes()
    big = len(data) + 1  # no cap here: every line of the file counts
    return list(read_lines(data, path.name, max_bytes=big, max_lines=big, max_chars=big).lines)


class ProgressBar:
    """``[######....] 512/1,000 sentences, 43.2 sentences/s, about 11 s left`` redrawn in
    place on stderr (``records.progress``: the words the app's bar uses)."""

    def __init__(self) -> None:
        self.meter, self.drawn = ProgressMeter("sentences"), False

    def __call__(self, done: int, total: int) -> None:
        p = self.meter.update(done, total)
        fill = int(BAR * p.fraction)
        sys.stderr.write(f"\r[{'#' * fill}{'.' * (BAR - fill)}] {p.text()} ")
        sys.stderr.flush()
        self.drawn = True

    def end(self) -> str:
        """What ends the bar's line before the next message: a newline once it was drawn."""
        return "\n" if self.drawn else ""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m viz_transformer corpus",
        description="Statistics of every attention head over a corpus (one sentence a line).",
    )
    p.add_argument("--model", required=True, help="a model name (see vt.available_models())")
    p.add_argument("--sentences", required=True, type=Path, help="text file, one sentence a line")
    p.add_argument("--out", required=True, type=Path, help="folder for the Parquet shards")
    p.add_argument(
        "--batch-size", type=int, default=64, help="sentences run at once (64: fastest measured)"
    )
    p.add_argument("--engine", choices=("local", "ray"), default="local")
    p.add_argument(
        "--dtype", choices=tuple(DTYPES), help="an hf: model's weights (default: VT_DTYPE, float32)"
    )
    return p


def main(argv: list[str]) -> int:
    """Run the command; 0 on success, 1 on bad input, 130 when interrupted."""
    args = _parser().parse_args(argv)
    bar = ProgressBar()
    if args.dtype:  # read by load_model here and, through the environment, by Ray's workers
        settings.DTYPE = os.environ["VT_DTYPE"] = args.dtype
    try:
        sentences = read_sentences(args.sentences)
        compute(
            args.model,
            sentences,
            args.out,
            batch_size=args.batch_size,
            engine=args.engine,
            progress=bar,
        )
        rows = ShardStore(args.out).rows()
    except KeyboardInterrupt:
        print(f"{bar.end()}stopped; run the same command again to go on.", file=sys.stderr)
        return 130
    except (ValueError, RuntimeError, OSError) as exc:
        print(f"{bar.end()}error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    print(
        f"{bar.end()}{rows:,} rows ({len(sentences):,} sentences) in {args.out}; read them "
        f"with vt.read_corpus_stats({str(args.out)!r})."
    )
    return 0
