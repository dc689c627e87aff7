"""Tests of app/ui/, a room per app/ui folder; here the window fixtures, the scripted engine and the child scripts."""
