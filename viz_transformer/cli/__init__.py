"""Command-line tools (``python -m viz_transformer COMMAND``), one module per command."""
