"""Many requests decoded side by side: one forward pass a step over every running request's rows.

- driver.py: The engine's replies decoded side by side: each reply an iterator of its own events, advanced by one step.
- draft_batch.py: The draft model drafting for every sequence of a batch at once, one pass per draft position.
- hooks.py: What a request decoded side by side is told about its sequence (a kept state restored, then saved).
- scheduler.py: Continuous batching: requests join and leave between steps; drafts decided for the step.
- sequences.py: The sequences of one model's context, side by side in one KV budget, each with its mirror.
"""
