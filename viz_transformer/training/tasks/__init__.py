"""The built-in tasks and their paper models (``paper-reverse``, ``paper-dates``, ``paper-sov``).

``catalog`` defines the tasks (seeded samplers, a held-out split by CRC32); ``train`` trains the
paper's Transformer on one and ships it into ``viz_transformer/weights/paper-<task>/``::

    OMP_NUM_THREADS=1 .venv/bin/python -m viz_transformer.training.tasks.train --task reverse

``--task all`` retrains every one (minutes each on a CPU; each ``meta.json`` records its run's
seconds); ``--device cuda`` trains on a GPU.
"""
