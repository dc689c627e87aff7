"""/v1/embeddings (OpenAI's) and /v1/rerank (llama-server's), answered by `serve --embedding`'s embedding process.

- requests.py: the two request bodies read into what the embedding process runs, every bad value refused with one sentence.
- routes.py: the routes: the body checked off the event loop, the request queued for the embedding process, its answer shaped.
- ollama_embed.py: Ollama's /api/embed and /api/embeddings over the same embedding process, in Ollama's shapes.
"""
