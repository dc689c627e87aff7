"""Tests of app/engine/speculation/."""
