"""Tests of app/ui/attachments/."""
