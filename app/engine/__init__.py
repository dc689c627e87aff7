"""The engine: decoding with speculation, plain Python that a CLI, a test or another front end can drive. No Qt.

- config.py: GenerationConfig and LoadSettings, what a request and a load ask for.
- events.py: the plain records a reply streams (tokens, rounds, the finish with its stats).
- protocol.py: ChatEngine, the one protocol every engine follows (local, remote, the tests' scripted one), and
  fitted_reply, the one way to ask for a reply.
- targets.py: LocalModel | ServerModel, what a load asks for, and the string key the store keeps for each.
- errors.py: EngineError and its kinds, each with a sentence for a person.
- child_process.py: what a llama.cpp child's end says (last error line, signal, a build this CPU cannot run), and
  the CLI's supervisor that says it for a SIGILL.
- local/: models loaded in this process through llama-cpp-python, and the decoding loop.
- speculation/: who drafts, how far, and what forward passes cost.
- gguf/: reading GGUF files, what llama.cpp would refuse, draft compatibility.
- placement/: devices, GPU layers and RPC workers.
- remote/: models on OpenAI-compatible servers.
- host/: the engine process's loop, which the window supervises.
"""
