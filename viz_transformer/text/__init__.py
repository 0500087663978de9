"""Text coming in: word and SentencePiece vocabularies, uploaded files and input checks."""
