"""The window's side of the engine process: one handle that starts, supervises and listens to it.

- engine_process.py: The window's handle on the engine process: starts it, turns its replies into signals, and supervises it.
"""
