"""`specchat-cli generate`: one reply, plain or speculative, streamed to the terminal or printed as JSON."""

from __future__ import annotations

import argparse
import dataclasses
import os
import json
import sys

from pathlib import Path
from typing import Optional

from app.bench.args import add_model_arguments, parse_draft_max
from app.cli.checks import (
    THREADS_HELP,
    UsageError,
    add_load_options,
    check_text,
    load_problem,
    models_problems,
    read_text_file,
    sampling_problem,
)
from app.cli.file_guard import ModelFileGuard
from app.cli.image_options import add_image_arguments, image_content, image_problem, projector_path, read_images
from app.cli.terminal import json_printable, printable, say_error
from app.cli.thinking_options import (
    ThinkingPrinter,
    add_thinking_arguments,
    reasoning_json,
    thinking_config,
    thinking_problem,
)
from app.cli.tool_loop import (
    DEFAULT_MAX_STEPS,
    NoToolsError,
    ToolSteps,
    mcp_problem,
    start_tool_host,
    terminal_permissions,
    tools_of,
)
from app.replies.tool_loop import ToolRun, call_messages, limit_sentence
from app.cli.tool_options import call_lines, calls_json, read_schema, read_tools, reply_calls
from app.engine.config import THREADS_AUTO, DrafterChoice, LoadSettings
from app.engine.errors import EngineError, PromptFormatError
from app.engine.placement.rpc import parse_endpoints
from app.engine.remote.server_keys import ENV_VAR as ENV_API_KEY
from app.store.attachments import Attachment, AttachmentError, check_total, read_attachment, with_attachments
from app.engine.targets import LocalModel, ServerModel
from app.engine.speculation.history_file import CLI_SESSION


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "generate",
        help="generate text with a target model, optionally speculating with a draft model or n-gram lookup",
        description="Generate one reply. Without --draft or --ngram this is plain decoding.",
    )
    add_model_arguments(p, target_required=False)
    remote = p.add_argument_group("a model on a server (instead of --target)")
    remote.add_argument(
        "--server",
        metavar="URL",
        help="an OpenAI-compatible server (llama-server, vLLM, ...), e.g. http://host:8080; "
        "speculation is whatever the server was started with. user:pass@ in the URL is sent as "
        "basic auth, never printed; control characters in what the server sends are never printed",
    )
    remote.add_argument("--model", metavar="NAME", help="the server's model (as its /v1/models lists it)")
    remote.add_argument(
        "--api-key-file",
        metavar="FILE",
        help=f"a file holding the API key for this --server URL; without it, {ENV_API_KEY} (which "
        "applies to the --server URL given with it only), else the key saved for that URL in the "
        "window's Settings. A key goes to no other server, and one sent over plain http to another "
        "machine gets a warning",
    )
    p.add_argument(
        "--rpc",
        metavar="HOST:PORT[,HOST:PORT...]",
        default="",
        help="spread the target's layers over llama.cpp RPC workers (ggml-rpc-server); the draft stays "
        "here. Each worker is checked first in a child process, with a timeout. RPC has no "
        "authentication: trusted networks only",
    )
    p.add_argument(
        "--draft-p-min",
        type=float,
        default=0.0,
        help="stop drafting when the draft's top probability falls below this (default 0)",
    )
    p.add_argument("--temperature", type=float, default=0.0, help="0 = greedy (default)")
    p.add_argument("--top-k", type=int, default=40)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--min-p", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default 4096)")
    p.add_argument("--threads", type=int, default=None, help=THREADS_HELP)
    add_load_options(p)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt", help="raw text to continue (no chat template)")
    source.add_argument("--prompt-file", metavar="FILE", help="like --prompt, the text read from a UTF-8 file")
    source.add_argument("--chat", help="a user message, formatted with the model's chat template")
    p.add_argument("--system", default=None, help="system prompt for --chat")
    p.add_argument(
        "--attach",
        metavar="FILE",
        action="append",
        default=[],
        help="attach a text or code file to the --chat message (repeatable): sent after it as the "
        "file's name and content in a fenced block, as the window sends attachments. The n-gram "
        "drafter copies from it best: try it with --ngram when asking for an edit of the file",
    )
    add_image_arguments(p)
    p.add_argument(
        "--history",
        action="store_true",
        help="draft from the history of earlier replies where it has a proposal, by n-gram lookup "
        "elsewhere (with --draft-max K: fixed drafts of K from it). --ngram and --draft use history "
        "too when auto finds it pays",
    )
    p.add_argument(
        "--no-history",
        action="store_true",
        help="neither draft from the history of earlier replies (all chats and earlier generate runs, "
        "kept in the data folder) nor add this reply to it",
    )
    p.add_argument(
        "--tools",
        metavar="FILE.json",
        default=None,
        help="OpenAI-style tool definitions offered to the model (with --chat); its calls are printed",
    )
    p.add_argument(
        "--json-schema",
        metavar="FILE",
        default=None,
        help="decode the reply under this JSON schema (llama.cpp's grammar; a local --target only)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object with text, reasoning (the thinking's text and tokens), tokens (each "
        "with its drafter, round and part), rounds (what was proposed, refused ones included, and kept) "
        "and stats (split into thinking and answer)",
    )
    p.add_argument(
        "--mcp",
        metavar="MCP.JSON",
        default=None,
        help="offer the tools of the MCP servers listed in this file (Claude Desktop's, Cursor's and LM "
        "Studio's mcp.json format; with --chat). Each call the model makes is shown and asked about "
        "first (yes, always this tool, no); its result goes back to the model until it answers",
    )
    p.add_argument(
        "--allow-tools",
        action="store_true",
        help="with --mcp: run every call without asking (without a terminal, calls are refused unless this is given)",
    )
    p.add_argument(
        "--max-steps",
        type=int,
        default=DEFAULT_MAX_STEPS,
        help=f"with --mcp: the most replies in one run, calls included (default {DEFAULT_MAX_STEPS})",
    )
    add_thinking_arguments(p)
    p.add_argument(
        "--hide-thinking",
        action="store_true",
        help="print the answer only, not the thinking (plain output; --json always has both)",
    )
    p.set_defaults(func=run)


def models_problem(args: argparse.Namespace) -> str | None:
    """The target's and the draft's files, checked before loading so a bad one is refused, never crashes us."""
    paths = {role: path for role, path in (("target", args.target), ("draft", getattr(args, "draft", None))) if path}
    return models_problems(paths) if paths else None


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


def read_attachments(args: argparse.Namespace) -> list[Attachment]:
    """The --attach files, read and checked like the window's attachments. Raises UsageError."""
    if args.attach and args.chat is None:
        raise UsageError("--attach goes with --chat MESSAGE (attachments are part of a chat message)")
    try:
        attachments = [read_attachment(path) for path in args.attach]
        check_total(attachments)
    except AttachmentError as exc:
        raise UsageError(f"--attach: {exc}") from None
    return attachments


def server_problem(args: argparse.Namespace) -> str | None:
    """--server needs --model and --chat, and takes no local models."""
    if not args.server:
        if args.model or args.api_key_file:
            return "--model and --api-key-file go with --server URL"
        if not args.target:
            return "give --target MODEL.gguf, or --server URL with --model NAME"
        return None
    if args.target or args.draft or args.ngram:
        return (
            "--server replaces --target, --draft and --ngram: the server runs the model, and speculates with "
            "the draft it was started with"
        )
    if not args.model:
        return "--server needs --model NAME (one of the names the server's /v1/models lists)"
    if args.chat is None:
        return "--server needs --chat MESSAGE (a server formats the chat itself; raw --prompt text is local only)"
    return None


def _server_key(args: argparse.Namespace) -> str | None:
    """The key for --server: --api-key-file, else SPECCHAT_API_KEY (over https or to this machine only), else the
    key saved for that URL in the window. Each goes to the --server URL only (the client follows no redirect).
    Raises ValueError for an unreadable key file."""
    from app.engine.remote.server_keys import api_key_for, env_api_key, read_key_file

    if args.api_key_file:
        return read_key_file(args.api_key_file)
    env_key = env_api_key()
    if env_key and not _plain_http_elsewhere(args.server):
        return env_key
    return api_key_for(args.server)


def _env_key_warning(args: argparse.Namespace) -> str | None:
    """A warning when SPECCHAT_API_KEY is held back (plain http to another machine: a key set in the environment
    is never sent where anyone on the network between could read it), or goes to a server on another machine that
    SPECCHAT_API_KEY_SERVER does not name: a key set for one server should not travel silently to whatever
    --server says."""
    from app.engine.remote.http import display_url, is_loopback_url, normalize_url
    from app.engine.remote.server_keys import env_api_key

    if args.api_key_file or not env_api_key() or is_loopback_url(normalize_url(args.server)):
        return None
    shown = display_url(normalize_url(args.server))
    if _plain_http_elsewhere(args.server):
        return (
            f"warning: SPECCHAT_API_KEY is not sent to {shown}: over plain http to another machine anyone on "
            "the network between could read it; use https://, or --api-key-file to send a key anyway"
        )
    meant_for = os.environ.get("SPECCHAT_API_KEY_SERVER", "").strip()
    if meant_for and normalize_url(meant_for) == normalize_url(args.server):
        return None
    return (
        f"warning: SPECCHAT_API_KEY is sent to {shown}; set SPECCHAT_API_KEY_SERVER to the one server it is "
        "for (then this warning stops), or use --api-key-file"
    )


def _plain_http_elsewhere(url: str) -> bool:
    """Whether `url` is plain http to a host other than this machine."""
    from app.engine.remote.http import is_loopback_url, normalize_url

    url = normalize_url(url)
    return url.lower().startswith("http://") and not is_loopback_url(url)


def _plain_http_warning(url: str) -> str | None:
    """A warning when a key would cross the network unencrypted: plain http to a host other than this machine."""
    from app.engine.remote.http import display_url, normalize_url

    if _plain_http_elsewhere(url):
        return (
            f"warning: the API key is sent to {display_url(normalize_url(url))} over plain http, readable by "
            "anyone on the network between; use https:// for a server on another machine"
        )
    return None


def server_model(args: argparse.Namespace) -> ServerModel:
    return ServerModel.at(args.server, args.model)


def _drafter(args: argparse.Namespace, draft_max: Optional[int]) -> DrafterChoice:
    """With --draft, Auto chooses each round between the draft model and copying (n-gram, history), as the window
    does: a reply that copies its input drafts long copies for free (on the F16 target's code fix, 21.2 tok/s
    against 7.8 with the draft model alone). A fixed --draft-max drafts with the model only."""
    if args.draft:
        return "model" if draft_max is not None else "auto"
    return "history" if args.history else "ngram"


def local_load_settings(args: argparse.Namespace, rpc: str = "") -> LoadSettings:
    """--ctx and --threads (both `generate` and `bench` have them), the load options where the command has them
    (checks.add_load_options), with `rpc` workers for the target."""
    return LoadSettings(
        n_ctx=args.ctx,
        n_threads=args.threads or THREADS_AUTO,
        rpc_servers=parse_endpoints(rpc) if rpc else (),
        n_batch=getattr(args, "batch", 0),
        flash_attn=getattr(args, "flash_attn", "auto"),
        kv_type=getattr(args, "kv_type", "f16"),
        mmap=not getattr(args, "no_mmap", False),
        mlock=getattr(args, "mlock", False),
        n_parallel=getattr(args, "parallel", 1),
    )


def local_model(args: argparse.Namespace) -> tuple[LocalModel, Optional[Path]]:
    """--target and --draft as typed targets (checked by models_problem first)."""
    return LocalModel(Path(args.target)), Path(args.draft) if args.draft else None


def build_engine(args: argparse.Namespace, history_file=None):
    """The engine `generate` asks: a server's model with --server, else local models. `history_file`: the history
    drafter's file (the data folder's by default)."""
    from app.engine.host.engine_factory import local_engine, server_engine

    if args.server:
        key = _server_key(args)
        for warning in (_plain_http_warning(args.server) if key else None, _env_key_warning(args)):
            if warning:
                print(warning, file=sys.stderr)
        return server_engine(server_model(args), LoadSettings(n_ctx=args.ctx), api_key=key)
    return local_engine(*local_model(args), local_load_settings(args, args.rpc), history_file=history_file)


def run(args: argparse.Namespace) -> int:
    from app.engine.config import GenerationConfig

    try:
        draft_max = parse_draft_max(args.draft_max)
        _prompt_text(args)
        attachments = read_attachments(args)
        problem = (
            server_problem(args)
            or sampling_problem(args)
            or load_problem(args)
            or thinking_problem(args)
            or models_problem(args)
            or image_problem(args)
        )
        args.images = read_images(args) if not problem else []
        if not problem and args.rpc:
            if args.server:
                raise UsageError("--rpc spreads a local --target; a --server runs its model itself")
            parse_endpoints(args.rpc)
        if not problem and args.history and (args.draft or args.no_history or args.server):
            problem = "--history drafts from history alone: leave out --draft, --no-history and --server"
        if not problem and args.server:
            _server_key(args)  # a bad --api-key-file is a usage error
        if not problem and args.tools and args.chat is None:
            problem = "--tools needs --chat: tools go to the model's chat template"
        if not problem:
            problem = mcp_problem(args)
        if not problem and args.json_schema and args.server:
            problem = "--json-schema decodes a local --target under a grammar; a --server runs its own decoding"
        tools_json = read_tools(args.tools) if args.tools and not problem else ""
        schema_json = read_schema(args.json_schema) if args.json_schema and not problem else ""
        if problem:
            raise UsageError(problem)
    except (ValueError, UsageError) as exc:
        say_error(exc)
        return 2
    speculative = bool(args.draft or args.ngram or args.history or args.server)
    config = GenerationConfig(
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        min_p=args.min_p,
        seed=args.seed,
        speculative=speculative,
        drafter=_drafter(args, draft_max),
        draft_max=draft_max,
        draft_p_min=args.draft_p_min,
        history=not args.no_history,
        session=CLI_SESSION,
        tools=tools_json,
        json_schema=schema_json,
        **thinking_config(args),
    )
    host = start_tool_host(args.mcp) if args.mcp else None
    guard = ModelFileGuard([args.target, args.draft] if not args.server else [])
    try:
        with guard:
            finished, tokens, rounds, tool_format, share, steps = _generate(args, config, attachments, host)
    except (EngineError, NoToolsError) as exc:
        changed = guard.changed()
        say_error(f"{changed}; the reply stopped" if changed else exc)
        # A picture llama.cpp cannot decode (cut short past its header) is bad input, like one the checks refuse.
        return 2 if isinstance(exc, PromptFormatError) and args.images else 1
    finally:
        if host is not None:
            host.close()
    tools_json = tools_json or steps.tools_json
    changed = guard.changed()
    if changed or finished is None:
        # The file was rewritten in place (no SIGBUS): what llama.cpp read of it mid-reply is not the model.
        say_error(
            f"{changed}; the reply above may not be the model's"
            if changed
            else "the reply ended without its closing statistics"
        )
        return 1
    if finished is None:
        print("error: the engine ended without finishing the reply", file=sys.stderr)
        return 1
    stats = finished.stats
    content, calls = reply_calls(finished.calls_text, tool_format, tools_json) if tools_json else (finished.text, [])
    if args.json:
        keys = (
            "tokens",
            "tokens_per_second",
            "ttft_s",
            "drafted",
            "accepted",
            "acceptance_rate",
            "mean_accepted_run",
            "rounds",
            "stop_reason",
            "reasoning_tokens",
            "reasoning_drafted",
            "reasoning_accepted",
            "reasoning_s",
            "ended_in_reasoning",
            "prompt_tokens",
            "prompt_cached",
            "prompt_eval_s",
            "kept_states",
            "kept_bytes",
            "kept_budget_bytes",
        )
        # Per token its drafter and round (an index into "rounds"); per round every proposed id, the refused ones too.
        out = {
            "text": finished.text,
            "reasoning": reasoning_json(finished),
            "tokens": tokens,
            "rounds": rounds,
            "stats": {k: getattr(stats, k) for k in keys},
        }
        out["stats"]["draft_len_histogram"] = stats.draft_len_histogram
        out["stats"]["split"] = share.to_dict()
        # The prompt's tokens read now, beside prompt_cached: those whose KV cache was kept (a saved state).
        out["stats"]["prompt_read"] = stats.prompt_tokens - stats.prompt_cached
        if tools_json:
            out["content"] = content
            out["tool_calls"] = calls_json(calls)
        if host is not None:
            out["steps"] = steps.records
        sys.stdout.write(json_printable(json.dumps(out, ensure_ascii=False)) + "\n")
    else:
        for line in call_lines(calls):
            sys.stdout.write(printable(line) + "\n")
        summary = f"{stats.tokens} tokens, {stats.tokens_per_second:.1f} tok/s, ttft {stats.ttft_s:.2f}s"
        if speculative:
            summary += (
                f", acceptance {stats.acceptance_rate:.0%} ({stats.accepted}/{stats.drafted}), {stats.rounds} rounds"
            )
        if stats.reasoning_tokens:
            summary += f"; thinking {stats.reasoning_tokens} tokens in {stats.reasoning_s:.1f}s"
            if speculative and stats.reasoning_drafted:
                summary += (
                    f" (acceptance {stats.reasoning_accepted / stats.reasoning_drafted:.0%}, answer "
                    f"{_answer_acceptance(stats)})"
                )
        print(f"[{summary}; stopped: {stats.stop_reason}]", file=sys.stderr)
    return 0


def _generate(args: argparse.Namespace, config, attachments: list[Attachment], host=None):
    """Load, generate and close: (the last FinishedEvent, its token records, its round records, the tool format,
    its thinking share, the tool steps). Streams the reply's text to stdout unless --json. With a tool `host`
    (--mcp), the calls each reply makes are asked about, run, and sent back until a reply calls nothing. Raises
    EngineError, NoToolsError."""
    engine = build_engine(args)
    if args.images and not args.server:
        try:
            engine.load_projector(projector_path(args))
        except BaseException:
            engine.close()
            raise
    steps = ToolSteps(permissions=terminal_permissions(args.allow_tools), run=ToolRun(max_steps=args.max_steps))
    try:
        if args.chat is None:
            return _one(args, engine, engine.complete(args.prompt, config), steps)
        messages = [{"role": "system", "content": args.system}] if args.system else []
        messages.append(
            {"role": "user", "content": image_content(with_attachments(args.chat, attachments), args.images)}
        )
        if host is not None:
            config = dataclasses.replace(config, tools=tools_of(host))
            steps.tools_json = config.tools
        while True:
            result = _one(args, engine, engine.reply(messages, config), steps)
            finished = result[0]
            if host is None or finished is None or finished.stats.stop_reason != "eos" or not config.tools:
                return result
            content, calls = reply_calls(finished.calls_text, engine.tool_format, config.tools)
            step = steps.run.next_step(calls)
            if step == "answer":
                return result
            if not args.json:
                sys.stdout.write("\n")
            if step == "limit":
                print(f"[{limit_sentence(args.max_steps)} (--max-steps)]", file=sys.stderr)
                break
            if step == "repeated":
                # The results are in the conversation, so the next reply is asked without tools, to answer from them.
                print(
                    "[the model asked again for calls it already made: asking it to answer from their results]",
                    file=sys.stderr,
                )
                config = dataclasses.replace(config, tools="", tool_choice="")
                continue
            messages.extend(call_messages(content, steps.run_calls(host, content, calls, sys.stderr)))
        return result
    finally:
        engine.close()


def _one(args: argparse.Namespace, engine, events, steps):
    finished, tokens, rounds, share = _stream_reply(args, events)
    return finished, tokens, rounds, engine.tool_format, share, steps


def _stream_reply(args: argparse.Namespace, events):
    """One reply's events: printed as they come (unless --json), and kept as (the FinishedEvent, the token
    records, the round records, the thinking share)."""
    from app.engine.events import FinishedEvent, NoticeEvent, RoundEvent, ThreadsEvent, TokenEvent
    from app.engine.reasoning.share import ThinkingShare
    from app.store.provenance import RoundRecord

    tokens, rounds, finished = [], [], None
    share = ThinkingShare()
    printer = ThinkingPrinter(hide=args.hide_thinking)
    for event in events:
        share.feed(event)
        if isinstance(event, TokenEvent):
            tokens.append(
                {
                    "id": event.token_id,
                    "text": event.text,
                    "source": event.source,
                    "drafter": event.drafter,
                    "round": event.round,
                    "part": event.part,
                }
            )
            if not args.json:
                printer.token(event)
        elif isinstance(event, RoundEvent):
            rounds.append(RoundRecord.from_event(event).to_dict())
        elif isinstance(event, ThreadsEvent):
            print(f"[{event.describe()}]", file=sys.stderr)  # as the window's status line says it
        elif isinstance(event, NoticeEvent):
            print(f"note: {printable(event.text)}", file=sys.stderr)
        elif isinstance(event, FinishedEvent):
            finished = event
    if not args.json:
        printer.finish(finished)
    return finished, tokens, rounds, share


def _answer_acceptance(stats) -> str:
    drafted, accepted = stats.drafted - stats.reasoning_drafted, stats.accepted - stats.reasoning_accepted
    return f"{accepted / drafted:.0%}" if drafted else "no drafts"
