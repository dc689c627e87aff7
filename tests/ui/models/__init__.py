"""Tests of app/ui/models/."""
