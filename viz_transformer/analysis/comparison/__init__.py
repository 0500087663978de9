"""Attention compared head by head: two models, or the checkpoints of one training.

``distances`` (Jensen-Shannon distances, Hungarian matching, drift: pure functions of arrays),
``tracing`` (what both sides share: models, kinds, sentences, same tokens), ``model_pair``
(``vt.compare``: model A against model B), ``drift`` (``vt.drift``: a run's checkpoints against
its last one).
"""
