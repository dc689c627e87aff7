"""Anthropic's Messages API (/v1/messages, /v1/messages/count_tokens), as Claude Code and the anthropic SDKs use it.

- requests.py: A Messages body read into the ChatRequest the engine runs (through requests.py's checks), its prompt kept cacheable.
- replies.py: The engine's records as Anthropic's stream events and whole message, through ReplyShaper.
- routes.py: The two routes, on job_flow.py's way through the server, with pings while a long prompt is read.
"""
