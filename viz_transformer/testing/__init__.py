"""Models built from a config with random weights, offline: for tests, benchmarks and trying a
family without a download (``paper``: the paper's Transformer; ``hf``: Hugging Face families with
real tokenizers). Seeded, so the same call gives the same weights; not for reading attention.
``distill``: a tiny offline corpus and student for the distillation's tests."""
