"""Tests of app/engine/tools/."""
