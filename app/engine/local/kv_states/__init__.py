"""Conversations' KV states, kept so that going back to a chat, or an API client's turn after another's, reads
only its new tokens.

- conversation_cache.py: Recent conversations' KV states kept in memory (LRU) and restored for the request they fit best.
- reply_use.py: One reply's use of them: a kept state restored before its prompt is read, its own kept after.
- saved_states.py: Long conversations' KV states on disk, per model file and settings, for a chat reopened after a restart.
"""
