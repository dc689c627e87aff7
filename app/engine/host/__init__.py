"""The engine process: its request loop and the engine it holds (local or remote).

- engine_factory.py: The engine the engine process holds: local models (SpecEngine) or a server's (RemoteEngine), by the target.
- worker.py: The engine's own process: the loop that owns a SpecEngine and answers requests over a pipe.
"""
