"""Tests of app/ui/widgets/."""
