"""Benchmark scripts (run each with ``python bench/<script>.py``) and the tests of their helpers
(``bench/test_*.py``, collected by ``pytest`` beside ``tests/``)."""
