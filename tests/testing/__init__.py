"""Tests of app/testing/."""
