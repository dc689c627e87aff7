"""Tests of app/ui/engine_link/."""
