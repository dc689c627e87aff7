"""Where the app lives on this machine: folders, desktop integration, secrets on disk, machine defaults. No Qt.

- cpu_load.py: How much of the CPU other programs take right now, from /proc (Linux).
- desktop_entry.py: Put SpecChat in this user's application menu on Linux (freedesktop), and take it out again.
- machine_defaults.py: Defaults the stored settings and the engine share: CPU threads (the physical performance cores), GPU layers, prompt batch sizes
- paths.py: Where SpecChat keeps its files: one place, so a pip install and the bundle share chats, settings and models.
- process_memory.py: A process's resident memory, from /proc (Linux), for the benchmarks that report it.
- secret_file.py: Secrets on disk (the Hugging Face token, servers' API keys): cleaned of pasted line breaks, written atomically, readable by their owner only.
"""
