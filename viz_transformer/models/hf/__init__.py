"""Hugging Face models: the spec (offline first), loading and tracing, our attention function,
hook names and step-by-step decoding."""
