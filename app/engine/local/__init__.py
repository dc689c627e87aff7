"""Local models through llama-cpp-python: loading, the KV cache, tokenizing, chat templates and the decoding loop.

- chat_format.py: Formatting a conversation with the model's own chat template (the Jinja text stored in the GGUF).
- context_fit.py: Fitting a conversation to the context: the one rule every engine (and the tests' scripted one) applies.
- decoder.py: The decoding loop: plain and speculative decoding are the same loop, a round drafts k >= 0 tokens and the target
- engine.py: SpecEngine: the target and draft models, the conversation's KV cache, and one entry point per kind of request.
- engine_costs.py: SpecEngine's forward-pass costs: measured for benchmarks, in idle time, forgotten when measured while busy.
- llama_model.py: One GGUF model loaded through llama-cpp-python's low-level API, with a KV cache we keep in step with.
- prompt_tokens.py: Tokenizing a chat prompt so that only the chat template's own markup becomes control tokens.
- sampling.py: Turning logits into token choices, and the speculative-sampling acceptance rule.
- thread_governor.py: CPU threads that follow the machine's load: fewer while another program keeps a core busy.
- text_stream.py: Token bytes to text without ever showing half a character.
"""
