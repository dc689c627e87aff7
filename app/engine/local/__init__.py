"""Local models through llama-cpp-python: loading, the KV cache, tokenizing, chat templates and the decoding loop.

- batch/: many requests decoded side by side, one forward pass a step (continuous batching).
- decoding/: decoding one reply, alone or side by side: its request, its reply and its rounds' steps.
- chat_format.py: Formatting a conversation with the model's own chat template (the Jinja text stored in the GGUF).
- vision/: pictures in prompts: a vision model's projector (its mmproj) through llama.cpp's mtmd.
- kv_states/: conversations' KV states kept across requests: in memory (LRU within a budget) and, for long ones, on
  disk, restored for the request they fit best.
- cost_cache.py: Measured cost tables on disk, keyed by the loaded models and where they run.
- cost_measurement.py: Measuring what forward passes cost, one forward pass at a time, so it fits into the moments nobody is waiting.
- engine.py: SpecEngine: one entry point per kind of request, over the loaded models, their prompts and each chat's policy.
- llama_loading.py: Opening a GGUF through llama.cpp: its log, the model's and the context's parameters, refusals said.
- llama_model.py: One GGUF model loaded through llama-cpp-python's low-level API, with a KV cache we keep in step with.
- model_pair.py: The target and draft as loaded: where their layers run, and the thread count that follows the load.
- policies.py: Each chat's speculation policy for the loaded models, and the cost tables they decide by.
- prompt_tokens.py: Tokenizing a chat prompt so that only the chat template's own markup becomes control tokens.
- reply_prompt.py: A request's prompt as the target reads it: a chat rendered (a reply continued, a call opened), or raw.
- reply_drafters.py: Which drafters a reply may use: the draft model, its n-gram drafter, a history book.
- prompts.py: One loaded target's prompts: its chat template, the last turn's tokens reused, per-message token counts.
- sampling.py: Turning logits into token choices (repetition penalties, log-probabilities too), and the speculative-sampling acceptance rule.
- grammar.py: Decoding under a grammar: llama.cpp's grammar sampler, through the bindings, as a mask over a row of logits.
- thread_governor.py: CPU threads that follow the machine's load: fewer while another program keeps a core busy.
"""
