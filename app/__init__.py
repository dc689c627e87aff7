"""SpecChat: a desktop chat app for local GGUF models that shows speculative decoding at work.

Layers, top to bottom (import-linter keeps them; docs/architecture.md draws them):
- ui/ | cli/: the window (the only Qt) and `specchat-cli`.
- bench/ | serve/: the benchmark suite both front ends run; the local OpenAI-compatible API.
- replies/ | library.py | documents/: what is made of finished replies; the model library on disk; documents
  indexed and retrieved with sources.
- store/ | hub/ | mcp/: the chat database and settings; the Hugging Face Hub; MCP tool servers.
- engine/: decoding with speculation, local or remote, and the engine process.
- platform/ | testing/: folders, the desktop entry, secrets, machine defaults and CPU load; tiny models for the
  bundle's self-test.
- common/: atomic writes, units, valid text, the HTTP client and JSON caches.
"""

__version__ = "0.1.0"
