"""Tests of app/library/."""
