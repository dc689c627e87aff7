"""OpenAI's Responses API (/v1/responses), stateless, as Codex CLI and the openai SDK speak it.

- requests.py: A /v1/responses body (input items, instructions, tools of every type) read into the chat request the engine runs.
- replies.py: One job's records as Responses events (numbered, each output item opened, filled and closed) and the response object.
- routes.py: The route build_app registers: a request's way through job_flow, streamed as named events or whole.
- catalog.py: What Codex reads about a model (its context window, its tools), served beside /v1/models' list.
"""
