"""GGUF files: reading headers, what llama.cpp would refuse, draft compatibility, and the probe in a child process.

- checks.py: What llama.cpp refuses, or aborts on, that a GGUF header already shows.
- compat.py: Can this draft model speculate for that target? llama.cpp's rules, answered from the files' metadata.
- compat_cache.py: The compatibility checks' cache: per-file facts and per-pair answers, keyed by (path, size, mtime) of the
- info.py: What a GGUF file holds, read from its header without touching the weights.
- kind.py: What a model is for (chat, embedding, reranker), read from its architecture, pooling type and template.
- mmproj.py: A vision model's projector file (mmproj-*.gguf): found beside the model by llama.cpp's naming, and checked against it.
- memory.py: What a model takes in memory once loaded: its weights and its KV cache at a context size and KV type.
- probe.py: Will llama.cpp load this model and tokenize with it, asked of a short-lived child process that may die instead.
- reader.py: The GGUF binary format: a small reader that walks the header, the key/value metadata and the tensor infos
"""
