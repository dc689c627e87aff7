"""Tests of app/ui/inspector/."""
