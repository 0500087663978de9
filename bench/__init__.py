"""Benchmark scripts (run each with ``python bench/<script>.py``), the helper modules they share
(``common``, ``models``, ``llama``, ``bergamot_timing``, ``lesson_ws``, ``retrieval_sweeps``)
and their harness (``harness/``: servers, browser, websocket client, statistics); the test
tooling (mutations, the unit tier's timing, contrast, and the tests of the benchmarks' helpers)
is in ``tooling/``."""
