"""Tests of app/engine/host/."""
