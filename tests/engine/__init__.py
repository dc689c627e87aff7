"""Tests of app/engine/."""
