"""Tests of app/engine/local/."""
