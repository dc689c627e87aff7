"""Tests of app/engine/gguf/."""
