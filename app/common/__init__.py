"""Helpers every layer may use: atomic writes and unit formatting. Imports nothing else of the app.

- atomic_write.py: One atomic file write for every file SpecChat keeps (settings, caches, registries).
- units.py: How sizes and counts read on every screen and in every command: one convention each.
"""
