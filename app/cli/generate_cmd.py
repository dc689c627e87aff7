"""`specchat-cli generate`: one reply, plain or speculative, streamed to the terminal or printed as JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from typing import Optional

from app.bench.args import add_model_arguments, local_load_settings, local_model, parse_draft_max
from app.cli.checks import (
    THREADS_HELP,
    UsageError,
    add_load_options,
    check_text,
    load_problem,
    models_problem,
    read_text_file,
    sampling_problem,
    server_problem,
)
from app.cli.documents.docs_options import DocsInput, add_docs_arguments, read_docs, source_lines
from app.cli.file_guard import ModelFileGuard
from app.cli.image_options import add_image_arguments, image_content, image_problem, projector_path, read_images
from app.cli.terminal import json_printable, printable, say_error
from app.cli.thinking_options import (
    ThinkingPrinter,
    add_thinking_arguments,
    thinking_config,
    thinking_problem,
)
from app.cli.tool_loop import (
    DEFAULT_MAX_STEPS,
    NoToolsError,
    ToolSteps,
    reply_until_answered,
    mcp_problem,
    start_tool_host,
    terminal_permissions,
    tools_of,
)
from app.replies.reply_json import reply_json, summary_line
from app.replies.tool_loop import ToolRun
from app.cli.tool_options import call_lines, calls_json, read_schema, read_tools, reply_calls
from app.engine.config import DrafterChoice, GenerationConfig, LoadSettings
from app.engine.errors import EngineError, PromptFormatError
from app.engine.placement.rpc import parse_endpoints
from app.engine.remote.server_keys import ENV_VAR as ENV_API_KEY
from app.store.attachments import Attachment, AttachmentError, check_total, read_attachment
from app.engine.targets import ServerModel
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
    add_docs_arguments(p)
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


def _drafter(args: argparse.Namespace, draft_max: Optional[int]) -> DrafterChoice:
    """With --draft, Auto chooses each round between the draft model and copying (n-gram, history), as the window
    does: a reply that copies its input drafts long copies for free (on the F16 target's code fix, 21.2 tok/s
    against 7.8 with the draft model alone). A fixed --draft-max drafts with the model only."""
    if args.draft:
        return "model" if draft_max is not None else "auto"
    return "history" if args.history else "ngram"


def build_engine(args: argparse.Namespace, history_file=None):
    """The engine `generate` asks: a server's model with --server, else local models. `history_file`: the history
    drafter's file (the data folder's by default)."""
    from app.engine.host.engine_factory import local_engine, server_engine
    from app.engine.remote.server_keys import env_key_warning, key_for_server, plain_http_warning

    if args.server:
        key = key_for_server(args.server, args.api_key_file)
        for warning in (
            plain_http_warning(args.server) if key else None,
            env_key_warning(args.server, args.api_key_file),
        ):
            if warning:
                print(warning, file=sys.stderr)
        return server_engine(ServerModel.at(args.server, args.model), LoadSettings(n_ctx=args.ctx), api_key=key)
    return local_engine(*local_model(args), local_load_settings(args, args.rpc), history_file=history_file)


@dataclasses.dataclass(frozen=True)
class _Inputs:
    """What the options name, read and checked before any model loads."""

    draft_max: Optional[int]
    attachments: list[Attachment]
    tools_json: str
    schema_json: str
    docs: DocsInput


def _checked_inputs(args: argparse.Namespace) -> _Inputs:
    """The options checked together and the files they name read (the prompt, attachments, pictures, tools, the
    schema), so a bad one is one sentence before anything loads. Raises UsageError, ValueError."""
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
    if problem:
        raise UsageError(problem)
    args.images = read_images(args)
    if args.rpc:
        if args.server:
            raise UsageError("--rpc spreads a local --target; a --server runs its model itself")
        parse_endpoints(args.rpc)
    if args.history and (args.draft or args.no_history or args.server):
        raise UsageError("--history drafts from history alone: leave out --draft, --no-history and --server")
    if args.server:
        from app.engine.remote.server_keys import key_for_server

        key_for_server(args.server, args.api_key_file)  # a bad --api-key-file is a usage error
    if args.tools and args.chat is None:
        raise UsageError("--tools needs --chat: tools go to the model's chat template")
    problem = mcp_problem(args)
    if problem:
        raise UsageError(problem)
    if args.json_schema and args.server:
        raise UsageError("--json-schema decodes a local --target under a grammar; a --server runs its own decoding")
    tools_json = read_tools(args.tools) if args.tools else ""
    schema_json = read_schema(args.json_schema) if args.json_schema else ""
    return _Inputs(draft_max, attachments, tools_json, schema_json, read_docs(args))


def _is_speculative(args: argparse.Namespace) -> bool:
    return bool(args.draft or args.ngram or args.history or args.server)


def _generation_config(args: argparse.Namespace, inputs: _Inputs) -> GenerationConfig:
    return GenerationConfig(
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        min_p=args.min_p,
        seed=args.seed,
        speculative=_is_speculative(args),
        drafter=_drafter(args, inputs.draft_max),
        draft_max=inputs.draft_max,
        draft_p_min=args.draft_p_min,
        history=not args.no_history,
        session=CLI_SESSION,
        tools=inputs.tools_json,
        json_schema=inputs.schema_json,
        **thinking_config(args),
    )


def run(args: argparse.Namespace) -> int:
    try:
        inputs = _checked_inputs(args)
    except (ValueError, UsageError) as exc:
        say_error(exc)
        return 2
    config = _generation_config(args, inputs)
    host = start_tool_host(args.mcp) if args.mcp else None
    guard = ModelFileGuard([args.target, args.draft] if not args.server else [])
    try:
        with guard:
            finished, tokens, rounds, tool_format, share, steps = _generate(args, config, inputs, host)
    except (EngineError, NoToolsError) as exc:
        changed = guard.changed()
        say_error(f"{changed}; the reply stopped" if changed else exc)
        # A picture llama.cpp cannot decode (cut short past its header) is bad input, like one the checks refuse.
        return 2 if isinstance(exc, PromptFormatError) and args.images else 1
    finally:
        if host is not None:
            host.close()
    tools_json = inputs.tools_json or steps.tools_json
    changed = guard.changed()
    if changed or finished is None:
        # The file was rewritten in place (no SIGBUS): what llama.cpp read of it mid-reply is not the model.
        say_error(
            f"{changed}; the reply above may not be the model's"
            if changed
            else "the reply ended without its closing statistics"
        )
        return 1
    content, calls = reply_calls(finished.calls_text, tool_format, tools_json) if tools_json else (finished.text, [])
    if args.json:
        reply = reply_json(finished, tokens, rounds, share.to_dict())
        if tools_json:
            reply["content"] = content
            reply["tool_calls"] = calls_json(calls)
        if host is not None:
            reply["steps"] = steps.records
        if args.docs:
            reply["sources"] = [source.to_dict() for source in inputs.docs.sources]
        sys.stdout.write(json_printable(json.dumps(reply, ensure_ascii=False)) + "\n")
    else:
        for line in call_lines(calls):
            sys.stdout.write(printable(line) + "\n")
        for line in source_lines(inputs.docs):
            print(printable(line), file=sys.stderr)
        print(
            f"[{summary_line(finished.stats, _is_speculative(args))}; stopped: {finished.stats.stop_reason}]",
            file=sys.stderr,
        )
    return 0


def _generate(args: argparse.Namespace, config, inputs: _Inputs, host=None):
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
        messages = inputs.docs.chat(
            args.system,
            args.chat,
            inputs.attachments,
            lambda text: image_content(text, args.images),
            lambda messages: engine.count_tokens(messages, config) <= engine.n_ctx - args.max_tokens,
        )
        if host is None:
            return _one(args, engine, engine.reply(messages, config), steps)
        config = dataclasses.replace(config, tools=tools_of(host))
        steps.tools_json = config.tools
        return reply_until_answered(
            engine,
            messages,
            config,
            host,
            steps,
            lambda events: _one(args, engine, events, steps),
            max_steps=args.max_steps,
            quiet=args.json,
        )
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
