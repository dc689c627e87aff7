"""Models on OpenAI-compatible servers: the HTTP client, the engine over it, its provenance and API keys.

- chunks.py: What a server's reply stream may carry, checked once where it enters the app: valid text, clamped counters, malformed events named.
- engine.py: RemoteEngine: a ChatEngine whose model runs on an OpenAI-compatible server (llama-server, vLLM, LM Studio, ...).
- http.py: Talking to an OpenAI-compatible server (llama.cpp's llama-server, vLLM, LM Studio, Ollama, ...): its model list
- reply_parts.py: A remote reply's thinking and answer counted as its tokens arrive, for its FinishedEvent and stats.
- reply_stream.py: One server reply read event by event: chunks checked, tokens and draft rounds told, the request's limits kept.
- server_drafts.py: Which tokens of a llama-server reply its draft model proposed, rebuilt from the per-token timings it streams.
- server_errors.py: What a failure talking to a server says, in one sentence: the errors, the URL as shown, each status and network failure.
- server_keys.py: API keys of remote servers, kept like the Hugging Face token: one owner-only file, never logged; which key goes to a URL.
- tool_calls.py: Tools through a remote server: messages that carry calls on the wire, and streamed calls put back together.
"""
