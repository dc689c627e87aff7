"""Tests of app/platform/."""
