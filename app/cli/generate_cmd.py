"""`specchat-cli generate`: one reply, plain or speculative, streamed to the terminal or printed as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from app.bench.args import add_model_arguments, parse_draft_max
from app.cli.checks import UsageError, check_text, model_problem, read_text_file, sampling_problem
from app.engine.errors import EngineError
from app.engine.placement.rpc import parse_endpoints
from app.engine.remote.server_keys import ENV_VAR as ENV_API_KEY
from app.engine.speculation.history_file import CLI_SESSION


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "generate",
        help="generate text with a target model, optionally speculating with a draft model or n-gram lookup",
        description="Generate one reply. Without --draft or --ngram this is plain decoding.",
    )
    add_model_arguments(p, target_required=False)
    remote = p.add_argument_group("a model on a server (instead of --target)")
    remote.add_argument("--server", metavar="URL",
                        help="an OpenAI-compatible server (llama-server, vLLM, ...), e.g. http://host:8080; "
                        "speculation is whatever the server was started with")
    remote.add_argument("--model", metavar="NAME", help="the server's model (as its /v1/models lists it)")
    remote.add_argument("--api-key-file", metavar="FILE",
                        help=f"a file holding the server's API key (or set {ENV_API_KEY})")
    p.add_argument("--rpc", metavar="HOST:PORT[,HOST:PORT...]", default="",
                   help="spread the target's layers over llama.cpp RPC workers (ggml-rpc-server); the draft stays "
                   "here. RPC has no authentication: trusted networks only")
    p.add_argument("--draft-p-min", type=float, default=0.0,
                   help="stop drafting when the draft's top probability falls below this (default 0)")
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--min-p", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default 4096)")
    p.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", help="raw text to continue (no chat template)")
    source.add_argument("--prompt-file", metavar="FILE", help="like --prompt, the text read from a UTF-8 file")
    source.add_argument("--chat", help="a user message, formatted with the model's chat template")
    p.add_argument("--system", default=None, help="system prompt for --chat")
    p.add_argument("--history", action="store_true",
                   help="draft from the history of earlier replies where it has a proposal, by n-gram lookup "
                   "elsewhere (with --draft-max K: fixed drafts of K from it). --ngram and --draft use history "
                   "too when auto finds it pays")
    p.add_argument("--no-history", action="store_true",
                   help="neither draft from the history of earlier replies (all chats and earlier generate runs, "
                   "kept in the data folder) nor add this reply to it")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object with text, tokens (each with its drafter and round), rounds (what "
                   "was proposed, refused ones included, and kept) and stats")
    p.set_defaults(func=run)


def models_problem(args: argparse.Namespace) -> str | None:
    """The target's and the draft's files, checked before loading so a bad one is refused, never crashes us."""
    for role, path in (("target", args.target), ("draft", getattr(args, "draft", None))):
        if path:
            problem = model_problem(path, role)
            if problem:
                return problem
    return None


def _prompt_text(args: argparse.Namespace) -> str:
    """The --prompt, --prompt-file or --chat text, checked. Raises UsageError."""
    if args.prompt_file is not None:
        args.prompt = read_text_file(args.prompt_file, "--prompt-file")
    for flag, value in (("--prompt", args.prompt), ("--chat", args.chat), ("--system", args.system)):
        problem = check_text(value, flag)
        if problem:
            raise UsageError(problem)
    text = args.chat if args.chat is not None else args.prompt
    if not text:
        raise UsageError(f"the {'--chat message' if args.chat is not None else 'prompt'} is empty")
    return text


def server_problem(args: argparse.Namespace) -> str | None:
    """--server needs --model and --chat, and takes no local models."""
    if not getattr(args, "server", None):
        if getattr(args, "model", None) or getattr(args, "api_key_file", None):
            return "--model and --api-key-file go with --server URL"
        if not args.target:
            return "give --target MODEL.gguf, or --server URL with --model NAME"
        return None
    if args.target or args.draft or args.ngram:
        return ("--server replaces --target, --draft and --ngram: the server runs the model, and speculates with "
                "the draft it was started with")
    if not args.model:
        return "--server needs --model NAME (one of the names the server's /v1/models lists)"
    if args.chat is None:
        return "--server needs --chat MESSAGE (a server formats the chat itself; raw --prompt text is local only)"
    return None


def _server_key(args: argparse.Namespace) -> str | None:
    from app.engine.remote.server_keys import api_key_for, read_key_file

    if args.api_key_file:
        return read_key_file(args.api_key_file)
    return api_key_for(args.server)


def build_engine(args: argparse.Namespace, history_file=None):
    """The engine `args` asks for, models loaded. `history_file`: the history drafter's file (the data folder's
    by default)."""
    from app.engine.config import LoadSettings, default_threads
    from app.engine.local.engine import SpecEngine

    if getattr(args, "server", None):
        from app.engine.remote.engine import RemoteEngine, remote_target

        key = _server_key(args)
        engine = RemoteEngine(LoadSettings(n_ctx=args.ctx), api_key_for=lambda url: key)
        engine.load_target(remote_target(args.server, args.model))
        return engine

    rpc_servers = parse_endpoints(args.rpc) if getattr(args, "rpc", "") else ()
    engine = SpecEngine(LoadSettings(n_ctx=args.ctx, n_threads=args.threads or default_threads(),
                                     rpc_servers=rpc_servers), history_file=history_file)
    engine.load_target(args.target)
    if getattr(args, "draft", None):
        engine.load_draft(args.draft)
    return engine


def run(args: argparse.Namespace) -> int:
    from app.engine.config import GenerationConfig
    from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
    from app.store.provenance import RoundRecord

    try:
        draft_max = parse_draft_max(args.draft_max)
        _prompt_text(args)
        problem = server_problem(args) or sampling_problem(args) or models_problem(args)
        if not problem and args.rpc:
            if args.server:
                raise UsageError("--rpc spreads a local --target; a --server runs its model itself")
            parse_endpoints(args.rpc)
        if not problem and args.history and (args.draft or args.no_history or args.server):
            problem = "--history drafts from history alone: leave out --draft, --no-history and --server"
        if not problem and args.server:
            _server_key(args)  # a bad --api-key-file is a usage error
        if problem:
            raise UsageError(problem)
    except (ValueError, UsageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    speculative = bool(args.draft or args.ngram or args.history or args.server)
    config = GenerationConfig(
        max_tokens=args.max_tokens, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
        min_p=args.min_p, seed=args.seed, speculative=speculative,
        drafter="model" if args.draft else "history" if args.history else "ngram", draft_max=draft_max,
        draft_p_min=args.draft_p_min,
        history=not args.no_history, session=CLI_SESSION,
    )
    try:
        engine = build_engine(args)
        if args.chat is not None:
            messages = ([{"role": "system", "content": args.system}] if args.system else [])
            messages.append({"role": "user", "content": args.chat})
            events = engine.chat(messages, config)
        else:
            events = engine.complete(args.prompt, config)
        tokens, rounds, finished = [], [], None
        for event in events:
            if isinstance(event, TokenEvent):
                tokens.append({"id": event.token_id, "text": event.text, "source": event.source,
                               "drafter": event.drafter, "round": event.round})
                if not args.json:
                    sys.stdout.write(event.text)
                    sys.stdout.flush()
            elif isinstance(event, RoundEvent):
                rounds.append(RoundRecord.from_event(event).to_dict())
            elif isinstance(event, FinishedEvent):
                finished = event
        engine.close()
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    stats = finished.stats
    if args.json:
        keys = ("tokens", "tokens_per_second", "ttft_s", "drafted", "accepted", "acceptance_rate",
                "mean_accepted_run", "rounds", "stop_reason")
        # Per token its drafter and round (an index into "rounds"); per round every proposed id, the refused ones too.
        out = {"text": finished.text, "tokens": tokens, "rounds": rounds,
               "stats": {k: getattr(stats, k) for k in keys}}
        out["stats"]["draft_len_histogram"] = stats.draft_len_histogram
        json.dump(out, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n")
        summary = f"{stats.tokens} tokens, {stats.tokens_per_second:.1f} tok/s, ttft {stats.ttft_s:.2f}s"
        if speculative:
            summary += (f", acceptance {stats.acceptance_rate:.0%} ({stats.accepted}/{stats.drafted}),"
                        f" {stats.rounds} rounds")
        print(f"[{summary}; stopped: {stats.stop_reason}]", file=sys.stderr)
    return 0
