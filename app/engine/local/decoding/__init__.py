"""Decoding one reply, alone or side by side with others: app.engine.local.batch imports this, never the other way.

- request.py: One reply to decode, as one record: what the single decoder and the batch are both given.
- reply.py: One request's reply as its rounds keep tokens: its written tokens, text, stop reason and statistics.
- round_step.py: One round of one reply in the steps every decoder takes: planned, drafted, verified, learned, written.
- verify.py: The target's verdict on a draft: the drafted tokens it keeps and the token it adds itself.
- model_drafter.py: The draft model's drafter for a reply alone: a smaller model sharing the vocabulary, one token a pass.
- single.py: One reply decoded alone: the loop of rounds (`generate`).
- text_stream.py: Token bytes to text without ever showing half a character.
"""
