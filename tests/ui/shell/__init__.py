"""Tests of app/ui/shell/."""
