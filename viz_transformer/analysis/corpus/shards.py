"""A folder of Parquet shards with a manifest: where corpus statistics are kept, resumably.

Shard ``i`` holds the rows of sentences ``i * shard_size`` to ``(i + 1) * shard_size - 1``. Each
shard and the manifest are written to a temporary file and renamed, so a process killed at any
moment leaves only whole shards (and a stray temporary file, removed on the next open); a run
that finds shards computes only the others. One process at a time computes in a folder
(``lock``: released by the operating system when its holder dies, even by ``kill -9``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

MANIFEST = "manifest.json"
_SHARD = "shard-{:06d}.parquet"


@dataclass(frozen=True)
class Manifest:
    """What a folder's shards were computed from; a folder holds one model's one corpus.

    Attributes:
        model: the model's name; model_hash: SHA-256 of its weights.
        corpus_hash: SHA-256 of the sentences (one per line); n_sentences: how many.
        shard_size: sentences per shard.
        versions: package versions that computed it (viz-transformer, torch, ...).
    """

    model: str
    model_hash: str
    corpus_hash: str
    n_sentences: int
    shard_size: int
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def n_shards(self) -> int:
        return -(-self.n_sentences // self.shard_size)


def _atomic_write(path: Path, write: object) -> None:
    """Write through ``write(tmp_path)`` then rename onto ``path`` (atomic on one filesystem)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)  # type: ignore[operator]
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class ShardStore:
    """The shards and manifest under one folder."""

    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)

    def manifest(self) -> Manifest | None:
        """The folder's manifest, or None when it has none yet."""
        path = self.folder / MANIFEST
        if not path.is_file():
            return None
        return Manifest(**json.loads(path.read_text()))

    def open(self, wanted: Manifest) -> Manifest:
        """Create the folder for ``wanted``, or check that it holds the same model and corpus.

        Returns:
            The manifest in force (an existing folder keeps its shard size).

        Raises:
            ValueError: the folder holds another model's or another corpus's shards, or is a
                file; the message says to pick another folder.
        """
        if self.folder.exists() and not self.folder.is_dir():
            raise ValueError(f"{self.folder} is a file; give a folder for the shards.")
        self.folder.mkdir(parents=True, exist_ok=True)
        have = self.manifest()
        if have is None:
            if any(self.folder.glob("shard-*.parquet")):
                raise ValueError(f"{self.folder} holds shards but no manifest; use a new folder.")
            text = json.dumps(asdict(wanted), indent=1)
            _atomic_write(self.folder / MANIFEST, lambda p: p.write_text(text))
            return wanted
        for what, a, b in (
            ("model", (have.model, have.model_hash), (wanted.model, wanted.model_hash)),
            ("corpus", have.corpus_hash, wanted.corpus_hash),
        ):
            if a != b:
                raise ValueError(
                    f"{self.folder} holds another {what}'s statistics ({have.model}, "
                    f"{have.n_sentences} sentences); give another --out folder or delete it."
                )
        for stray in self.folder.glob(".*.tmp"):  # left by a killed writer
            stray.unlink(missing_ok=True)
        return have

    def path(self, shard: int) -> Path:
        return self.folder / _SHARD.format(shard)

    def missing(self, manifest: Manifest) -> list[int]:
        """The shards not written yet, in order."""
        return [i for i in range(manifest.n_shards) if not self.path(i).is_file()]

    def write(self, shard: int, rows: pd.DataFrame) -> None:
        """Write shard ``shard`` atomically."""
        _atomic_write(self.path(shard), lambda p: rows.to_parquet(p, index=False))

    def read(self) -> list[pd.DataFrame]:
        """Every shard written so far, in shard order (possibly none)."""
        files = sorted(self.folder.glob("shard-*.parquet"))
        return [pd.read_parquet(f) for f in files]

    def rows(self) -> int:
        """Rows in the shards written so far, read from their footers (no data loaded)."""
        import pyarrow.parquet as pq

        return sum(pq.read_metadata(f).num_rows for f in self.folder.glob("shard-*.parquet"))

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the folder's lock: another process or thread waits until this one is done."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)
