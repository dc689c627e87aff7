"""Conversations' KV states, kept so that going back to a chat, or an API client's turn after another's, reads
only its new tokens.

- conversation_cache.py: Recent conversations' KV states kept in memory (LRU) and restored for the request they fit best.
- saved_states.py: Long conversations' KV states on disk, per model file and settings, for a chat reopened after a restart.
"""
