"""Tests of app/engine/placement/."""
