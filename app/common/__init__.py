"""Helpers every layer may use: atomic writes and unit formatting. Imports nothing else of the app.

- atomic_write.py: One atomic file write for every file SpecChat keeps (settings, caches, registries).
- http_client.py: One HTTP client shim (httpx2 or httpx), what counts as a network failure, and which hosts are this machine.
- json_cache.py: One versioned JSON cache file, read back whatever it holds (the costs, compat and probe caches).
- text.py: Text that can be stored, shown and written anywhere: valid Unicode, and the one gate for text shown.
- units.py: How sizes and counts read on every screen and in every command: one convention each.
"""
