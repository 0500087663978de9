"""Retrieval and sink heads of long inputs (issue 47): which heads copy a needle hidden in a long
text, scored as Wu et al. (2024) score them (``run``), over several depths and texts (``sweep``)."""
