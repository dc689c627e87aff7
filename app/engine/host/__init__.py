"""The engine process: its request loop and the engine it holds (local or remote).

- api_answers.py: An API client's request answered by the engine, as wire records (serve's engine process, the window's).
- errands.py: The window's requests besides loading and replying: list the devices, forget a deleted chat, the API history,
  a picture's tokens.
- engine_factory.py: The engine the engine process holds (local or a server's, by the target); the CLI's typed builders.
- stops.py: Which requests are to stop, shared by two processes: a flag per request answered side by side.
- supervisor.py: One child process supervised (the engine's for the window and serve, the embedding model's): started, fed, reaped, ended, restarted.
- wire.py: Every message between the window and the engine process, as frozen records matched by type at both ends.
- worker.py: The engine's own process: the loop that owns a SpecEngine and answers requests over a pipe.
"""
