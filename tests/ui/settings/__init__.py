"""Tests of app/ui/settings/."""
