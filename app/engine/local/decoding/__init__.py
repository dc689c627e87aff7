"""Decoding one reply, alone or side by side (app.engine.local.batch imports this, never the other way).

- request.py: One reply to decode, as one record: what the single decoder and the batch are both given.
"""
