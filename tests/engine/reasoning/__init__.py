"""Tests of app/engine/reasoning/."""
