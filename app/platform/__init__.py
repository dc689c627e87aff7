"""Where the app lives on this machine: folders, desktop integration, secrets on disk, machine defaults. No Qt.

- desktop_entry.py: Put SpecChat in this user's application menu on Linux (freedesktop), and take it out again.
- machine_defaults.py: Defaults the stored settings and the engine share, so that storage need not import the engine: CPU threads
- paths.py: Where SpecChat keeps its files: one place, so a pip install and the bundle share chats, settings and models.
- secret_file.py: Secrets on disk (the Hugging Face token, servers' API keys): written atomically, readable by their owner only.
"""
