"""Tests of app/cli/."""
