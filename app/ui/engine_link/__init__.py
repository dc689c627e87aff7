"""The window's side of the engine process: one handle that starts, supervises and listens to it.

- api_bridge.py: The window's local API: its HTTP side runs in the window's process, and its requests cross to the engine process.
- api_server.py: The window's switch for the local API: it starts the API server in the window's process (app.ui.engine_link.
- engine_process.py: The window's handle on the engine process: starts it, turns its replies into signals, and supervises it.
- settings_answers.py: What Settings shows that only the engine process finds out (devices, the API history), and its Clear.
- worker_death.py: What the window says when the engine process dies or hangs: the record of the death and its sentences.
"""
