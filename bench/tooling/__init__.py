"""The project's test tooling, apart from the benchmarks: ``mutations.py`` (does the unit tier
catch small realistic bugs: the rows of ``mutations.tsv``), ``suite_time.py`` (how long the
suite or a tier of it takes and where the time goes), ``contrast.py`` (the app's colour
contrast ratios), and the tests of the benchmarks' own helpers (``test_*.py``, run by the same
``pytest``)."""
