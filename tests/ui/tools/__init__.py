"""Tests of app/ui/tools/."""
