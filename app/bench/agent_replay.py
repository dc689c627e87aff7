"""A recorded coding agent's session (the requests Claude Code sent, as tests/fixtures/agents/claude_code_session/
holds them) and its replay against an Anthropic Messages server: each request streamed in the recorded order,
timed to its first token and to its end, with the prompt tokens the server says it read from its cache."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from app.common.http_client import http_client

# Headers that belong to the recorded connection, not to the request.
CONNECTION_HEADERS = frozenset({"host", "content-length", "connection", "accept-encoding", "x-api-key"})
# The events whose arrival is the reply's first token: text, thinking or a tool call's arguments.
FIRST_TOKEN_EVENTS = frozenset({"content_block_delta"})


@dataclass(frozen=True)
class RecordedRequest:
    """One POST /v1/messages the agent sent: its file name, headers (the connection's own left out) and body."""

    name: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class RequestTiming:
    """One replayed request as the client saw it. prompt_tokens counts every prompt token; cached those read from
    the server's cache (None when the server does not say); error is one sentence, or None."""

    name: str
    prompt_tokens: int
    cached: Optional[int]
    output_tokens: int
    ttft_s: Optional[float]
    total_s: float
    error: Optional[str] = None

    @property
    def cached_share(self) -> Optional[float]:
        """The share of the prompt read from the cache, or None when the server does not say."""
        if self.cached is None or not self.prompt_tokens:
            return None
        return self.cached / self.prompt_tokens


def load_session(folder: Path) -> list[RecordedRequest]:
    """The session's /v1/messages requests in the order they were sent (the files' names). Raises ValueError with
    one sentence when the folder holds none."""
    requests = []
    for path in sorted(folder.glob("*.json")):
        recorded = json.loads(path.read_text(encoding="utf-8"))
        if recorded.get("method") != "POST" or not str(recorded.get("path", "")).startswith("/v1/messages"):
            continue
        headers = {k: v for k, v in recorded.get("headers", {}).items() if k.lower() not in CONNECTION_HEADERS}
        requests.append(RecordedRequest(path.name, headers, recorded["body"]))
    if not requests:
        raise ValueError(f"{folder} holds no recorded POST /v1/messages request")
    return requests


def replay(
    url: str,
    requests: list[RecordedRequest],
    max_tokens: int,
    deadline_s: float,
    shape: Callable[[dict], dict] = lambda body: body,
) -> list[RequestTiming]:
    """Each request sent to `url` in order, streamed, greedy (temperature 0), its reply capped at `max_tokens`;
    `shape` may rewrite a body first (a test cuts long texts for a tiny model's context)."""
    httpx = http_client()
    timings = []
    for request in requests:
        body = shape({**request.body, "stream": True, "temperature": 0})
        body["max_tokens"] = min(int(body.get("max_tokens") or max_tokens), max_tokens)
        # A connection of its own per request: llama-server closes an idle kept-alive one while the next request
        # is being sent on it, which would fail that request for no fault of either server.
        with httpx.Client(timeout=httpx.Timeout(deadline_s, connect=10.0), trust_env=False) as client:
            timings.append(_one(client, f"{url}/v1/messages", request, body))
    return timings


def _one(client: Any, url: str, request: RecordedRequest, body: dict) -> RequestTiming:
    start = time.perf_counter()
    first: Optional[float] = None
    usage: dict[str, Any] = {}
    error = None
    try:
        with client.stream("POST", url, json=body, headers=request.headers) as answer:
            if answer.status_code != 200:
                answer.read()
                error = f"HTTP {answer.status_code}: {_message_of(answer.text)}"
            else:
                for line in answer.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    event = json.loads(line[5:])
                    if first is None and event.get("type") in FIRST_TOKEN_EVENTS:
                        first = time.perf_counter() - start
                    usage.update(_usage_of(event))
                    if event.get("type") == "error":
                        error = str(event.get("error", {}).get("message", event))
    except Exception as exc:  # a broken stream or a refused connection is this request's result, not the bench's end
        error = f"{type(exc).__name__}: {exc}"
    total = time.perf_counter() - start
    if "cache_n" in usage:  # llama-server's own counters: prompt_n tokens read, cache_n kept
        cached, prompt = usage["cache_n"], usage["cache_n"] + usage.get("prompt_n", 0)
    else:  # Anthropic's: input_tokens read, cache_read_input_tokens kept
        cached = usage.get("cache_read_input_tokens")
        prompt = usage.get("input_tokens", 0) + (cached or 0)
    return RequestTiming(
        request.name,
        prompt_tokens=prompt,
        cached=cached,
        output_tokens=usage.get("output_tokens", usage.get("predicted_n", 0)),
        ttft_s=first,
        total_s=total,
        error=error,
    )


def _message_of(text: str) -> str:
    """An error answer's sentence: Anthropic's and OpenAI's shapes keep it in error.message."""
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return text[:200]
    return str(error.get("message", error)) if isinstance(error, dict) else text[:200]


def _usage_of(event: dict) -> dict[str, Any]:
    """The counters an event carries: Anthropic's usage (in message_start, then message_delta), and llama-server's
    `timings` (cache_n, prompt_n, predicted_n) where it adds them."""
    found: dict[str, Any] = {}
    for usage in (event.get("message", {}).get("usage"), event.get("usage")):
        if isinstance(usage, dict):
            found.update({k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)})
    timings = event.get("timings")
    if isinstance(timings, dict):
        found.update({k: timings[k] for k in ("cache_n", "prompt_n", "predicted_n") if isinstance(timings.get(k), int)})
    return found
