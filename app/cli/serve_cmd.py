"""`specchat-cli serve`: the loaded models as a local OpenAI-compatible API, speculating as the window does.

The models run in an engine process of their own (app.serve.engine.client, the loop the window's engine process
runs), so a llama.cpp crash costs only the request being answered: it gets an error with a sentence and a fresh
engine process loads the same models. This (main) thread hands it the requests one at a time in the order they
came; the HTTP side runs on its own thread (app.serve). Ctrl+C or SIGTERM stops both.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from app.bench.args import add_model_arguments, parse_draft_max
from app.cli.checks import (
    THREADS_HELP,
    UsageError,
    add_load_options,
    check_text,
    load_problem,
    parallel_count,
    sampling_problem,
)
from app.common.text import printable
from app.engine.config import PARALLEL_AUTO
from app.replies.status_words import kept_words

ENV_SERVE_KEY = "SPECCHAT_SERVE_API_KEY"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve a model as a local OpenAI-compatible API (/v1/chat/completions, /v1/completions, "
        "/v1/responses), Anthropic's /v1/messages and Ollama's /api/chat, with each token's drafter",
        description="Serve the target as an OpenAI-compatible API on this machine: /v1/chat/completions (tools, "
        "response_format, logprobs, penalties), /v1/completions (raw prompts; fill-in-the-middle with "
        '"suffix" on a model with FIM tokens) and /v1/responses (OpenAI\'s Responses API, stateless, as Codex CLI '
        "speaks it). Replies and completions speculate with the draft model (--draft) "
        "or n-gram lookup (--ngram), with the window's auto controller; without either, plain decoding. Every "
        'streamed chunk names each token\'s drafter in its "specchat" field. A field the server does not honour '
        "gets a 400 that names it (docs/api.md lists them). The models run in an engine process of their own: a "
        "llama.cpp crash costs only the request being answered (an error with one sentence), and the engine "
        "restarts with the same models. Ollama's API (/api/chat, /api/generate, /api/tags, /api/show) answers on the "
        "same port for clients written for Ollama; --port 11434 puts it where they look by default. Anthropic's "
        "/v1/messages and /v1/messages/count_tokens are served too, for Claude Code (docs/api.md says how to point "
        "it here).",
    )
    add_model_arguments(p)
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only). Anything else lets other "
        "machines in: set --api-key too",
    )
    p.add_argument(
        "--port",
        type=int,
        default=1234,
        help="port (default 1234; 11434 is Ollama's, where its clients look; 0 picks a free one)",
    )
    p.add_argument(
        "--api-key",
        action="append",
        default=None,
        help=f'the key clients must send as "Authorization: Bearer KEY" or "x-api-key: KEY" (or set {ENV_SERVE_KEY}, '
        "which other users cannot see in the process list). Given more than once, each key is a client "
        "of its own: one key's cached prompts and history are never reused for another's",
    )
    p.add_argument(
        "--max-tokens",
        type=int,
        default=4096,
        help="the most tokens one reply may ask for, and what it gets when it does not say (default 4096)",
    )
    p.add_argument(
        "--fetch-image-urls",
        action="store_true",
        help="fetch pictures that clients name by an http(s) URL (by default only data: URLs are read: the server "
        "would reach whatever host a client names, this machine's network included): at most 30 s for a "
        "request's pictures in all, up to 5 redirects, and never from this machine or a private network "
        "unless --image-url-hosts names the host",
    )
    p.add_argument(
        "--image-url-hosts",
        metavar="HOST[,HOST]",
        default=None,
        help="with --fetch-image-urls: hosts (names or addresses, as the URLs write them) that pictures may be "
        "fetched from although they are on this machine or a private network",
    )
    p.add_argument(
        "--queue",
        type=int,
        default=8,
        help="requests that may wait behind those being answered; more get HTTP 503 (default 8)",
    )
    p.add_argument(
        "--parallel",
        type=parallel_count,
        default=PARALLEL_AUTO,
        metavar="N|auto",
        help="requests answered side by side, decoded in one batch with speculation decided for the "
        "batch: 1 to 16, or auto (the default: as many as a quarter of the free memory holds at a full context "
        "each, up to 4). Each has --ctx tokens of its own KV cache (at most what the model was trained on); a "
        "number whose caches cannot fit the memory free is refused at start. 1: one at a time",
    )
    p.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default 4096)")
    p.add_argument("--threads", type=int, default=None, help=THREADS_HELP)
    add_load_options(p)
    p.add_argument(
        "--mmproj",
        metavar="FILE",
        default=None,
        help="the target's projector (llama.cpp's mmproj-*.gguf), so image_url parts (data: URLs) are "
        "read; default: the one beside the target named after it (docs/images.md), loaded at the first picture",
    )
    p.add_argument(
        "--embedding",
        metavar="FILE",
        default=None,
        help="a GGUF embedding model (nomic-embed-text, bge-small, ...) served at /v1/embeddings, or a reranker "
        "(bge-reranker) served at /v1/rerank; it runs in a process of its own, beside the chat model, so a chat "
        "reply never waits on it",
    )
    p.add_argument(
        "--history",
        choices=("off", "own"),
        default="off",
        help="drafting from earlier replies: off (default), or own: API clients' own history "
        "(history-api.sqlite3 in the data folder), never the person's chats",
    )
    p.set_defaults(func=run)


def _options(args: argparse.Namespace):
    """The server's options from the arguments. Raises UsageError or ValueError."""
    from app.engine.config import GenerationConfig
    from app.common.http_client import listen_host_problem
    from app.serve.key_store import key_problem
    from app.serve.requests import ApiLimits, ApiOptions, api_history

    draft_max = parse_draft_max(args.draft_max)
    problem = sampling_problem(
        argparse.Namespace(max_tokens=args.max_tokens, ctx=args.ctx, threads=args.threads)
    ) or load_problem(args)
    if problem:
        raise UsageError(problem)
    if not 0 <= args.port <= 65535:
        raise UsageError("--port must be from 0 to 65535")
    if args.queue < 0:
        raise UsageError("--queue must be 0 or more")
    env_key = os.environ.get(ENV_SERVE_KEY)
    keys = list(args.api_key) if args.api_key else [env_key] if env_key else []
    for what, value in [("--api-key", key) for key in keys] + [("--host", args.host)]:
        problem = check_text(value, what)
        if problem:
            raise UsageError(problem)
    if any(key_problem(key) for key in keys):
        raise UsageError("--api-key must be printable ASCII text without spaces (it travels in an HTTP header)")
    if len(set(keys)) < len(keys):
        raise UsageError("--api-key is given twice with the same key; each key is a client of its own")
    if listen_host_problem(args.host):
        raise UsageError("--host must be a host name or an IP address, such as 127.0.0.1")
    # As the window drafts: "auto" with a draft model (the draft model, or earlier text where that pays), n-gram
    # lookup alone with --ngram.
    defaults = GenerationConfig(
        speculative=bool(args.draft or args.ngram),
        drafter="auto" if args.draft else "ngram",
        draft_max=draft_max,
        session="api",
        **api_history(args.history == "own"),
    )
    limits = ApiLimits(
        max_tokens=args.max_tokens,
        max_queued=args.queue,
        fetch_image_urls=args.fetch_image_urls,
        image_url_hosts=_image_url_hosts(args),
    )
    return ApiOptions(
        host=args.host,
        port=args.port,
        api_key=keys[0] if keys else None,
        more_keys=tuple(keys[1:]),
        limits=limits,
        defaults=defaults,
    )


def _image_url_hosts(args: argparse.Namespace) -> tuple[str, ...]:
    """--image-url-hosts as a tuple of hosts. Raises UsageError."""
    from app.common.http_client import listen_host_problem

    if args.image_url_hosts is None:
        return ()
    if not args.fetch_image_urls:
        raise UsageError("--image-url-hosts needs --fetch-image-urls (without it no picture is fetched)")
    hosts = tuple(host.strip() for host in args.image_url_hosts.split(","))
    if not all(hosts) or any(listen_host_problem(host) for host in hosts):
        raise UsageError("--image-url-hosts must be host names or IP addresses separated by commas, such as 10.0.0.5")
    return hosts


def run(args: argparse.Namespace) -> int:
    from app.bench.args import local_load_settings, local_model
    from app.cli.checks import models_problem
    from app.common.http_client import is_loopback_host
    from app.engine.embedding.model import embedding_threads
    from app.engine.embedding.worker import EmbeddingStartError, EmbeddingWorker
    from app.serve.engine.client import EngineClient, EngineStartError
    from app.serve.server import ApiServer, ServeError

    try:
        options = _options(args)
        problem = models_problem(args)
        if problem:
            raise UsageError(problem)
        if args.embedding is not None and not Path(args.embedding).is_file():
            raise UsageError(f"--embedding: there is no file at {printable(args.embedding)}")
    except (ValueError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    previous_term = signal.signal(signal.SIGTERM, _interrupt)  # stopped as Ctrl+C stops it: child and all
    # Without --mmproj, the engine loads the projector beside the target at the first picture (a file that does not
    # fit is then that request's error, not the server's end).
    projector = Path(args.mmproj) if args.mmproj else None
    engine = EngineClient(*local_model(args), local_load_settings(args), say=_log, projector=projector)
    embedder = (
        EmbeddingWorker(
            Path(args.embedding),
            # Beside the chat model, at most half the cores (Embedder's default), and never more than --threads.
            n_threads=min(args.threads, embedding_threads()) if args.threads else None,
            max_queued=options.limits.max_queued,
            say=_log,
        )
        if args.embedding
        else None
    )
    server = ApiServer(options, embedder=embedder)
    try:
        if embedder is not None:
            embedder.start()  # first: a file that is no embedding model is the one sentence said
        server.publish(engine.start())
        url = server.start()
        model = server.served.target
        how = (
            f"speculating with the draft model {server.served.draft}"
            if args.draft
            else "speculating with n-gram lookup"
            if args.ngram
            else "plain decoding"
        )
        side = f", {server.served.parallel} requests at once" if server.served.parallel > 1 else ""
        _log(f"Serving {model} ({how}{side}) at {url}/v1 — Ctrl+C stops.")
        if embedder is not None and embedder.model is not None:
            reranker = embedder.model.kind == "reranker"
            route = "/v1/rerank" if reranker else "/v1/embeddings"
            what = "a reranker" if reranker else f"embedding, {embedder.model.dim} dimensions"
            _log(f"Embedding with {embedder.path.name} ({what}) at {url}{route}.")
        if server.served.parallel > 1:  # what the requests side by side take is part of how it loaded
            _log(engine.placement_note)
        if not is_loopback_host(options.host):
            _log(
                f"warning: listening on {options.host}: other machines can reach this server"
                + ("" if options.api_key else ", and it has no --api-key")
            )
        engine.work_off(server.queue, on_done=_report)
    except (EngineStartError, ServeError, EmbeddingStartError) as exc:
        print(f"error: {printable(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("stopping", file=sys.stderr)
    finally:
        engine.close()  # first: the requests it was answering end with a sentence before their streams close
        if embedder is not None:
            embedder.close()
        server.stop()
        signal.signal(signal.SIGTERM, previous_term)
    return 0


def _interrupt(_signum, _frame) -> None:
    raise KeyboardInterrupt


def _log(line: str) -> None:
    """One line of the server's log, through the one gate for shown text (a model's file name, llama.cpp's words)."""
    print(printable(line), file=sys.stderr, flush=True)


def _report(job, finished) -> None:
    """One line per answered request."""
    if finished is None:
        return
    s = finished.stats
    line = f"request {job.serial}: {s.tokens} tokens, {s.tokens_per_second:.1f} tok/s"
    if s.drafted:
        line += f", {kept_words(s)}"
    if s.stop_reason == "stop_string":
        line += ", ended by a stop string"
    print(line, file=sys.stderr, flush=True)
