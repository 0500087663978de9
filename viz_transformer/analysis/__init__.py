"""The numbers the pages show, computed from records and ``LoadedModel`` methods (never by
switching on a model family): aggregation, softmax saturation, positions, step-by-step
decoding, the Q/K/V walkthrough."""
