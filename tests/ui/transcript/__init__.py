"""Tests of app/ui/transcript/."""
