"""What a capture yields: the ``Trace`` record and its ``validate()``, lazy per-head patterns for
long inputs, and the JSON/NPZ export formats."""
