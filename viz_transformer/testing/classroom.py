"""A small lesson for the class store's fast tests (on ``make_engine("sqlite://")``, a database
in memory): its checks (choice, a positional-encoding number, free text) grade without a forward
pass. Its model, ``lesson-tiny``, is the tests' tiny paper model (the ``lesson_model`` fixture
offers it)."""

from __future__ import annotations

import math

COUNTING_LESSON = """\
title: Counting class
model: lesson-tiny
steps:
  - title: read
  - title: pick
    check: {kind: choice, options: [sine, cosine, tangent], correct: 1}
  - title: value
    check: {kind: number, quantity: pe_value, args: {position: 3, dim: 1, d_model: 8}}
  - title: say
    check: {kind: text}
  - title: pick again
    check: {kind: choice, options: [one, two], correct: 0}
"""
# a right answer per graded step (0-based), and wrong ones: the number is cos(3) = -0.98999
RIGHT = {1: "cosine", 2: f"{math.cos(3):.4f}", 4: "one"}
WRONG = {1: ["sine", "Tangent", "  SINE "], 2: ["0.5", "2", "-0.5"], 4: ["two", "TWO"]}
