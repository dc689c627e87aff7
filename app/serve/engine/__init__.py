"""Where the models answer the API's jobs. Plain Python, no Qt.

- host.py: The API server inside the window's engine process, which owns the models the window loaded.
- client.py: `specchat-cli serve`'s handle on its engine process: jobs in, answers out, restarted after a crash.
"""
