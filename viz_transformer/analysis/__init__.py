"""The numbers the pages show, computed from records and ``LoadedModel`` methods (never by
switching on which adapter loaded a model): aggregation, softmax saturation, positions, step-by-step
decoding, the Q/K/V walkthrough."""
