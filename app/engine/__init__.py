"""The engine: decoding with speculation, plain Python that a CLI, a test or another front end can drive. No Qt.

- config.py: GenerationConfig and LoadSettings, what a request and a load ask for.
- events.py: the plain records a reply streams (tokens, rounds, the finish with its stats).
- protocol.py: ChatEngine, the one protocol every engine follows (local, remote, the tests' scripted one), and
  fitted_reply, the one way to ask for a reply.
- context_fit.py: Fitting a conversation to the context: the one rule every engine (and the tests' scripted one) applies.
- targets.py: LocalModel | ServerModel, what a load asks for, and the string key the store keeps for each.
- errors.py: EngineError and its kinds, each with a sentence for a person.
- schema_limits.py: How far a JSON schema may expand as a grammar, checked before the converter or llama.cpp sees it.
- image_files.py: Pictures in a message (ImageInput) and the header checks each passes before a projector reads it.
- picture_formats.py: What a picture file's header declares, and whether its data is that picture (bombs, cut files).
- child_process.py: What a llama.cpp child's end says (last error line, signal, a build this CPU cannot run), and the
  CLI's supervisor that says it for a SIGILL.
- local/: models loaded in this process through llama-cpp-python, the decoding loop, the draft model's drafter and
  the timing of forward passes.
- speculation/: the decision layer: who drafts, how far, and what forward passes cost (no model, no llama.cpp).
- gguf/: reading GGUF files, what llama.cpp would refuse, draft compatibility.
- placement/: devices, GPU layers and RPC workers.
- reasoning/: a thinking model's reasoning told apart from its answer: the markers a template names, the stream
  splitter over a reply's tokens, and the thinking/answer split of the stats.
- tools/: tool calls in replies: which format a model writes, and reading calls out of its text.
- remote/: models on OpenAI-compatible servers.
- host/: the engine process's loop, which the window supervises.
- embedding/: embedding models and rerankers (Embedder), run in an embedding process of their own.

Layers, each importing only those below it (import-linter, pyproject.toml): host | embedding; remote | local; placement;
gguf | speculation; protocol | context_fit | image_files; config | events | targets | errors | child_process |
schema_limits | picture_formats.
"""
