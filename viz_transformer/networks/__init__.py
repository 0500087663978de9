"""Torch modules with hook points: the paper's Transformer and the Bergamot/Marian network,
their configs, positional encodings and decode loops. Imports nothing of ours but settings."""
