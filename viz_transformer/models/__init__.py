"""One adapter per model family (``LoadedModel``), the capture entry point and the registry."""
