"""Tests of app/common/."""
