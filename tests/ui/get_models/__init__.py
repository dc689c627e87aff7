"""Tests of app/ui/get_models/."""
