"""Plotly figures built from records only (``Trace`` and plain arrays), never from live models.

One module per view: ``attention`` (maps, overview), and the modules the other pages add.
"""
