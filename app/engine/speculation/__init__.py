"""Speculation: who drafts, how many tokens, and what forward passes cost on this machine.

- controller.py: The speculation controller: each round, the draft length that maximises expected tokens per second.
- cost_measurement.py: Measuring what forward passes cost, one forward pass at a time, so it fits into the moments nobody is waiting.
- costs.py: What a forward pass costs on this machine: the target's time for a batch of n tokens, the draft's per token.
- drafters.py: Where draft tokens come from: a smaller model that shares the target's vocabulary, or the text itself.
- history.py: The history drafter: what earlier prompts and replies went on with, across all chats, in bounded memory.
- history_file.py: The history drafter's texts on disk (bounded, per session), and keeping an index in step with them.
- online_costs.py: What forward passes cost on this machine now: the measured cost table, kept true by what rounds actually cost.
- policy.py: Deciding, round by round, who drafts and how many tokens.
- rounds.py: One speculative round's bookkeeping: propose, plan, and let the policy learn from what was kept.
"""
