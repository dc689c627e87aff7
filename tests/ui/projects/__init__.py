"""Tests of app/ui/projects/."""
