"""The local OpenAI-compatible (and Anthropic-compatible) API: one implementation that `specchat-cli serve` and the window run.

- reasoning_requests.py: A request's thinking settings (chat_template_kwargs, reasoning_effort, reasoning_format, budgets) read into GenerationConfig.
- requests.py: OpenAI-style request bodies read into what the engine runs, every bad value refused with one sentence.
- field_types.py: A request's JSON read strictly: the body (its nesting, its Unicode) and each field's type.
- tool_requests.py: The tool fields of a chat request and the messages that carry calls, checked.
- errors.py: BadRequest: a request the server will not run, with the one sentence sent back.
- jobs.py: Requests waiting for the engine, in order, and running one on the thread that owns the models.
- replies.py: One job's records as OpenAI's response shapes, with SpecChat's provenance and llama-server's counters.
- tool_replies.py: A reply's tool calls in OpenAI's shapes: whole (`message.tool_calls`) and streamed.
- pictures/: OpenAI's image_url parts read into pictures: data: URLs, or http(s) URLs fetched within bounds.
- responses/: /v1/responses: OpenAI's Responses API, stateless, read into a chat request and shaped as Responses events (Codex CLI).
- anthropic/: Anthropic's Messages API (/v1/messages, count_tokens) for Claude Code, on the same jobs and shaping.
- completions/: /v1/completions: raw prompts and fill-in-the-middle, read into what the engine runs and shaped as text completions.
- logprob_replies.py: Log-probabilities in OpenAI's two shapes: chat's `logprobs.content`, completions' lists.
- access.py: Who may ask: web pages (their Origin, any port), requests addressed to another name (their Host), the key.
- connections.py: The server's connections, bounded: how many, how long a request's head and body may take, idle time.
- job_flow.py: One request's way through the server whatever API it came by: body, queue, first record, records.
- http_app.py: The API's routes (Starlette): /v1/models, /v1/chat/completions, /v1/completions and /v1/responses, streamed or whole.
- embeddings/: /v1/embeddings (OpenAI's) and /v1/rerank (llama-server's), answered by `serve --embedding`'s embedding process.
- ollama/: Ollama's API (/api/chat, /api/generate, /api/tags, /api/show, ...) on the same port, for Ollama's clients.
- key_store.py: The API server's own key (what clients must send), kept in one owner-only file, never logged.
- engine/: where the models answer the API: an engine process apart from the HTTP side, its requests kept by id
  (flights.py, shared with the window's API) and `specchat-cli serve`'s handle on it (client.py).
- server.py: The API server: uvicorn on a thread of its own, answering from a JobQueue that the engine's thread works off.
"""
