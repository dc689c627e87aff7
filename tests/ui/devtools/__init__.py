"""Tests of app/ui/devtools/."""
