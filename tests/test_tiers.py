"""The fast tier (-m "not slow and not real_models", docs/testing.md) never loads the real models: a test that takes
them is in the real-model tier even where its mark was forgotten."""

from __future__ import annotations

from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")


def test_a_test_taking_the_real_models_without_its_mark_is_left_out_of_the_fast_tier(pytester):
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(
        test_unmarked="""
        def test_reads_a_real_model(real_models):
            assert real_models

        def test_on_tiny_models():
            pass
    """
    )
    result = pytester.runpytest("-m", "not slow and not real_models", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, deselected=1)
