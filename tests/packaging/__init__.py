"""Tests of app/packaging/."""
