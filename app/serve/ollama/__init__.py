"""Ollama's API on the same port as the OpenAI one, for the editors and chat front ends written for Ollama.

- requests.py: /api/chat and /api/generate bodies read into what the engine runs, through the OpenAI readers.
- replies.py: One job's records as Ollama's NDJSON lines and whole replies, with its counters in nanoseconds.
- models.py: The loaded model as /api/tags, /api/ps and /api/show describe it, and the names it answers to.
- routes.py: Ollama's routes (probes, listings, chat, generate, and sentences for what SpecChat does otherwise).
"""
