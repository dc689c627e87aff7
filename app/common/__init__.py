"""Helpers every layer may use: atomic writes, bounded reads and unit formatting. Imports nothing else of the app.

- atomic_write.py: One atomic file write for every file SpecChat keeps (settings, caches, registries).
- bounded_read.py: One reader for every file a person names: regular files only (no device, FIFO or folder), and
  never more than a limit read into memory.
- file_identity.py: A file's size and modification time, by which a changed model file is told.
- http_client.py: One HTTP client shim (httpx2 or httpx), what counts as a network failure, and which hosts are this machine.
- progress_line.py: One progress line for every long job the CLI shows (downloads, indexing), redrawn in place on a terminal.
- json_cache.py: One versioned JSON cache file, read back whatever it holds (the costs, compat and probe caches).
- text.py: Text that can be stored, shown and written anywhere: valid Unicode, and the one gate for text shown.
- units.py: How sizes and counts read on every screen and in every command: one convention each.
"""
