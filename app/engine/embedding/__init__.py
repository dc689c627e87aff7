"""Embedding models and rerankers: texts in, vectors (or relevance scores) out, for document search and the API.

- model.py: Embedder, one GGUF embedding model or reranker loaded through llama.cpp (`embed(texts)`, `dim`, `rank`),
  and TextEmbedder, the protocol a document index asks for.
- wire.py: the records that cross to the embedding process and back.
- worker.py: the embedding process (its own, beside the chat engine's) and EmbeddingWorker, the handle that asks it.
"""
