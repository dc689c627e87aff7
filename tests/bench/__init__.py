"""Tests of app/bench/."""
