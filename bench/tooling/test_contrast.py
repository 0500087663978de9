"""bench/tooling/contrast.py: WCAG's contrast formula and the theme's colours clear their
thresholds."""

from __future__ import annotations

import pytest

from bench.tooling.contrast import over, ratio, rows


def test_the_formula_gives_wcags_known_ratios():
    assert ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic near miss
    assert over("#000000", 0.5, "#ffffff") == "#808080"


def test_every_colour_of_the_theme_clears_its_threshold_and_streamlits_did_not():
    for what, needed, before, after in rows():
        assert after >= float(needed), what
        assert before < float(needed), what  # each row is a fix, not a colour that was fine
