"""The Ray engine writes the same table as the local one (a local Ray cluster of 2 CPUs)."""

from __future__ import annotations

import pytest
import ray  # requirements-cluster.txt: CI installs it; the app never imports it

import viz_transformer as vt
from tests.integration.test_corpus import assert_same_table, reverse_corpus


@pytest.mark.slow
def test_ray_computes_the_same_table_as_the_local_engine(tmp_path) -> None:
    texts = reverse_corpus(10)
    local = vt.corpus_stats("paper-reverse", texts, tmp_path / "local", shard_size=3)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        seen = []
        far = vt.corpus_stats("paper-reverse", texts, tmp_path / "ray", engine="ray",
                              shard_size=3, progress=lambda d, t: seen.append(d))  # fmt: skip
    finally:
        ray.shutdown()
    assert_same_table(far, local)
    assert seen[-1] == 10 and sorted(seen) == seen
    assert len(list((tmp_path / "ray").glob("shard-*.parquet"))) == 4
