"""Benchmark scripts at the top (run each with ``python bench/<script>.py``); what they share in
``harness/`` (the environment and report, the benchmark models, servers, browser, websocket
clients, statistics), which imports no script; the test tooling (mutations, the unit tier's
timing, contrast, and the tests of the harness) in ``tooling/``. Nothing imports a script."""
