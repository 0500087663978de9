"""Offline training: the built-in tasks, training of the paper models, the EN->PT corpus and
its distillation. Imports networks and text, never the app."""
