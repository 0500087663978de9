"""Training: three projects, one subpackage each, importing networks and text, never the app.

- ``tasks``: the built-in tasks (reversal, dates, a toy translation) and the offline training of
  their paper models, ``python -m viz_transformer.training.tasks.train --task all``.
- ``en_pt``: ``paper-en-pt``, the paper's Transformer distilled from the Bergamot EN->PT
  translator, ``python -m viz_transformer.training.en_pt.distill all``.
- ``live``: live training of a built-in task in seconds, for the *Watch it learn* page and
  ``vt.train_live``.

``steps`` is the one teacher-forced update ``tasks`` and ``en_pt`` both train with.
"""
