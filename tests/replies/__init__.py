"""Tests of app/replies/."""
