"""Speculation, the decision layer: who drafts, how many tokens, and what forward passes cost, over token ids and
seconds. No loaded model and no llama.cpp (app.engine.local drafts with the draft model and times the passes).

- acceptance.py: What drafts have been kept: per-position acceptance estimates, and the copying drafters' by match length.
- auto_controller.py: The speculation controller: each round, the draft length that maximises expected tokens per second.
- batch_plan.py: Draft lengths for a batch: each request's draft chosen for the step's expected tokens per second.
- costs.py: What a forward pass costs: the target's time for a batch of n tokens, the draft's per token, and the estimate to start from.
- drafters.py: Draft proposals, and the drafter that needs no model: n-gram lookup of the text itself.
- history.py: The history drafter: what earlier prompts and replies went on with, across all chats, in bounded memory.
- history_file.py: The history drafter's texts on disk (bounded, per session), and keeping an index in step with them.
- online_costs.py: What forward passes cost on this machine now: the measured cost table, kept true by what rounds actually cost.
- policy.py: Deciding, round by round, who drafts and how many tokens.
- rounds.py: One speculative round's bookkeeping: propose, plan, and let the policy learn from what was kept.
- tally.py: What the rounds of one reply drafted and kept, and the reply's statistics that follow from it.
"""
