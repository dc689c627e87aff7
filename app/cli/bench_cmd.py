"""`specchat-cli bench`: plain vs speculative decoding side by side, as ratios measured in one run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from app.bench.report import build_report, print_report
from app.cli.file_guard import ModelFileGuard
from app.cli.terminal import printable


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench",
        help="benchmark plain vs speculative decoding on a prompt suite (ratios measured in one run)",
        description=(
            "Runs every prompt in every mode (plain, fixed-k draft model, fixed-k n-gram, auto), interleaved, "
            "and prints the median tok/s, acceptance and, per prompt, the median over repetitions of each mode's "
            "tok/s over plain decoding's in the same repetition. If llama.cpp's "
            "llama-speculative-simple is found (PATH, --llama-spec, or ~/.cache/specchat-llama-reference/bin) "
            "the same prompts also run through it: its draft-model mode next to the fixed-k draft "
            "mode, its n-gram mode (ngram-simple) at the same k next to the fixed-k n-gram mode, and its ngram-mod "
            "and ngram-map-k modes with their own draft lengths. It writes past -n by what it drafted; where it "
            "wrote more than ours, ours run again over as many tokens and its ratios come from those pairs. "
            "History: no mode reads the history of earlier "
            "replies (the bench keeps its own, never yours) unless --second-pass asks for a second pass that does."
        ),
    )
    p.add_argument("--target", required=True, help="target GGUF model")
    p.add_argument("--draft", help="draft GGUF model (adds the draft-model modes)")
    p.add_argument("--ngram", action="store_true", help="add the fixed-k n-gram mode (always on without --draft)")
    p.add_argument(
        "--prompts",
        type=Path,
        help="JSON list of {name, kind, chat, system (optional)} (default: the "
        "built-in suite); where replies think, a table splits thinking and answer",
    )
    p.add_argument("--only", help="comma-separated prompt names to run")
    p.add_argument(
        "--modes",
        help="comma-separated modes to run: plain, draft, ngram, history, auto (plain always "
        "runs; history only in the second pass)",
    )
    p.add_argument(
        "--second-pass",
        action="store_true",
        help="run the suite twice: the first pass leaves each prompt's reply in a fresh history, the "
        "second draws on it (auto, and a fixed-k history mode): the next day, same project",
    )
    p.add_argument("--max-tokens", type=int, default=None, help="tokens per reply (default 128)")
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="repetitions per mode; the median is reported (default 3, 11 with --plain-vs-native)",
    )
    p.add_argument("--k", type=int, default=4, help="draft length of the fixed-k modes (default 4)")
    p.add_argument(
        "--draft-k",
        default="",
        help="more lengths for the fixed-k draft-model mode, comma-separated (e.g. 2,8); auto is set against each",
    )
    p.add_argument("--ctx", type=int, default=4096)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--llama-spec", help="path to llama.cpp's llama-speculative-simple")
    p.add_argument("--no-llama", action="store_true", help="skip the llama.cpp reference even if found")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument(
        "--plain-vs-native",
        action="store_true",
        help="instead of the suite: our plain greedy decoding against llama.cpp's llama-completion "
        "(PATH, --llama-completion, or ~/.cache/specchat-llama-reference/bin), sampling "
        "(T 0.8, top-k 40, top-p 0.95) against greedy, and a 1,500-token prompt's time to first "
        "token against llama.cpp's prompt evaluation; --repeats defaults to 11 here",
    )
    p.add_argument(
        "--under-load",
        action="store_true",
        help="instead of the suite: plain decoding with threads on Auto, at each fixed thread count, "
        "with --draft speculative (auto), and llama-completion at its default and at 1 thread, "
        "each on a quiet machine and while a busy program started in another session (setsid) "
        "keeps a core busy, interleaved; prints the ratios (--repeats defaults to 3 here, "
        "--max-tokens to 48 if not given)",
    )
    p.add_argument(
        "--agents",
        action="store_true",
        help="instead of the suite: a recorded Claude Code session (tests/fixtures/agents/claude_code_session) "
        "replayed through specchat-cli serve (--target, with --draft or else n-gram lookup) and through "
        "llama.cpp's llama-server (--jinja; ngram-simple, and -md with --draft) when found, one at a time: "
        "per request prompt tokens, share read from the cache, time to first token and total, then the "
        "total-time ratio (--ctx is raised to 8192 at least; --max-tokens caps each reply, default 128)",
    )
    p.add_argument("--llama-completion", help="path to llama.cpp's llama-completion")
    p.add_argument("--long-repeats", type=int, default=3, help="repetitions of the long prompt (default 3)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.cli.checks import sampling_problem
    from app.cli.checks import models_problem
    from app.bench.suite import MODE_KINDS, load_prompts
    from app.engine.config import MAX_DRAFT

    if args.max_tokens is None:
        args.max_tokens = 48 if args.under_load else 128
    problem = sampling_problem(args)
    if problem is None and not 1 <= args.k <= MAX_DRAFT:
        problem = f"--k must be from 1 to {MAX_DRAFT}"
    args.draft_ks = _draft_lengths(args.draft_k)
    if problem is None and (args.draft_ks is None or not all(1 <= v <= MAX_DRAFT for v in args.draft_ks)):
        problem = f"--draft-k takes draft lengths from 1 to {MAX_DRAFT}, comma-separated (e.g. 2,8)"
    if problem is None and args.draft_ks and not args.draft:
        problem = "--draft-k needs --draft: it sets the draft model's fixed lengths"
    if args.repeats is None and not args.plain_vs_native:
        args.repeats = 3
    if problem is None and args.repeats is not None and args.repeats < 1:
        problem = "--repeats must be at least 1"
    problem = problem or models_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        prompts = load_prompts(args.prompts)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"error: --prompts {args.prompts}: not a JSON list of {{name, kind, chat}} ({exc})", file=sys.stderr)
        return 2
    if args.only:
        wanted = set(args.only.split(","))
        prompts = [p for p in prompts if p.name in wanted]
    kinds = set(args.modes.split(",")) if args.modes else None
    unknown = (kinds or set()) - set(MODE_KINDS)
    if unknown:
        print(f"error: unknown mode {', '.join(sorted(unknown))}; choose from {', '.join(MODE_KINDS)}", file=sys.stderr)
        return 2
    log = (lambda line: print(line, file=sys.stderr)) if not args.json else (lambda line: None)
    guard = ModelFileGuard([args.target, args.draft], stopped="the benchmark stopped")
    with guard:
        code = _run_bench(args, prompts, kinds, log)
    changed = guard.changed()
    if changed:
        # Rewritten in place (no SIGBUS): what was measured was not one model throughout.
        print(f"error: {printable(changed)}; the figures above are not one model's", file=sys.stderr)
        return 1
    return code


def _draft_lengths(text: str) -> Optional[tuple[int, ...]]:
    """`--draft-k`'s comma-separated lengths, or None when one of them is not a whole number."""
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        return None


def _run_bench(args: argparse.Namespace, prompts, kinds, log) -> int:
    from app.bench.args import local_load_settings, local_model
    from app.engine.host.engine_factory import local_engine
    from app.bench.suite import run_suite
    from app.engine.errors import EngineError

    if args.plain_vs_native:
        return _plain_vs_native(args, log)
    if args.under_load:
        return _under_load(args, log)
    if args.agents:
        from app.bench.agents import print_agents_report, run_agents

        return _emit(args, run_agents(args, log), print_agents_report)
    import tempfile

    from app.engine.speculation.history_file import HistoryFile

    history_dir = tempfile.TemporaryDirectory(prefix="specchat-bench-history-")
    try:
        # The bench's own history, never the user's: no run copies a reply the user wrote, nor adds to theirs.
        engine = local_engine(
            *local_model(args),
            local_load_settings(args),
            history_file=HistoryFile(Path(history_dir.name) / "history.sqlite3"),
        )
        threads = engine.load_settings.threads
        # The suite compares steady states: the controller decides by measured costs, not by the estimate a new
        # model starts from (measured once per model and settings, then on disk).
        if not engine.costs_cached():
            log("measuring forward-pass costs (once per model and settings)…")
        engine.measure_costs(with_draft=engine.draft is not None)
        formatted = {p.name: engine.format_chat([{"role": "user", "content": p.chat}]) for p in prompts}
        replies: dict[str, str] = {}
        results = run_suite(
            engine,
            prompts,
            ngram=args.ngram,
            k=args.k,
            max_tokens=args.max_tokens,
            repeats=args.repeats,
            progress=log,
            kinds=kinds,
            draft_ks=args.draft_ks,
            on_reply=lambda prompt, text: replies.setdefault(prompt.name, text),
        )
        second = None
        if args.second_pass:
            for prompt in prompts:  # as the window or `generate` would have kept them
                engine.history_file.add(f"bench-{prompt.name}", formatted[prompt.name] + replies.get(prompt.name, ""))
            engine.history_file.read_only = True  # the second pass reads what the first left, nothing more
            log("second pass: drawing on the first pass's replies")
            second = run_suite(
                engine,
                prompts,
                ngram=args.ngram,
                k=args.k,
                max_tokens=args.max_tokens,
                repeats=args.repeats,
                progress=log,
                kinds=kinds,
                history=True,
                draft_ks=args.draft_ks,
            )
        reference = _references(args, engine, prompts, formatted, results, threads, log)
        engine.close()
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        history_dir.cleanup()

    from app.engine.placement.devices import build_features

    report = build_report(results, reference, prompts, args.k)
    report["llama_cpp_build"] = build_features()
    if second is not None:
        report["second_pass"] = build_report(second, {}, prompts, args.k)
    return _emit(args, report, print_report)


def _references(args, engine, prompts, formatted, results, threads: int, log) -> dict:
    """llama.cpp's example runs each speculative mode of ours that it has too: its draft-model mode against our
    fixed-k draft mode, its n-gram mode (`ngram-simple`) against our fixed-k n-gram mode at the same k, and its
    ngram-mod and ngram-map-k modes beside them (auto is compared with each), over the same stretch of reply
    (app.bench.references)."""
    from app.bench.references import run_references
    from app.bench.suite import LLAMA_NGRAM_TYPES, find_reference_tool

    ours = set(next(iter(results.values()))) if results else set()
    kinds = [kind for kind in ("draft", "ngram") if f"{kind} k={args.k}" in ours]
    if "ngram" in kinds:
        kinds += [t for t in LLAMA_NGRAM_TYPES if t != "ngram-simple"]
    binary = find_reference_tool("llama-speculative-simple", args.llama_spec) if kinds and not args.no_llama else None
    if not binary:
        return {}
    return run_references(
        engine,
        binary,
        prompts,
        formatted,
        kinds,
        target=Path(args.target),
        draft=Path(args.draft) if args.draft else None,
        k=args.k,
        max_tokens=args.max_tokens,
        threads=threads,
        n_ctx=args.ctx,
        repeats=args.repeats,
        ngram=args.ngram,
        log=log,
    )


def _plain_vs_native(args: argparse.Namespace, log) -> int:
    from app.bench.native import print_native_report, run_plain_vs_native
    from app.bench.suite import find_reference_tool
    from app.bench.args import local_load_settings, local_model
    from app.engine.errors import EngineError
    from app.engine.host.engine_factory import local_engine

    binary = find_reference_tool("llama-completion", args.llama_completion)
    if args.llama_completion and not Path(args.llama_completion).is_file():
        print(f"error: --llama-completion {args.llama_completion}: no such file", file=sys.stderr)
        return 2
    if binary is None:
        print(
            "error: llama-completion was not found (PATH, --llama-completion, or "
            "~/.cache/specchat-llama-reference/bin; ../shared/tools/build-llama-reference.sh builds it)",
            file=sys.stderr,
        )
        return 2
    repeats = args.repeats or 11
    try:
        target, _draft = local_model(args)
        engine = local_engine(target, None, local_load_settings(args))  # plain decoding: no draft model to load
        report = run_plain_vs_native(
            engine,
            binary,
            Path(args.target),
            threads=engine.load_settings.threads,
            n_ctx=args.ctx,
            max_tokens=args.max_tokens,
            repeats=repeats,
            long_repeats=max(1, args.long_repeats),
            progress=log,
        )
        engine.close()
    except (EngineError, RuntimeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return _emit(args, report, print_native_report)


def _under_load(args: argparse.Namespace, log) -> int:
    from app.bench.suite import find_reference_tool
    from app.bench.under_load import print_under_load_report, run_under_load
    from app.engine.errors import EngineError

    binary = None if args.no_llama else find_reference_tool("llama-completion", args.llama_completion)
    if binary is None and not args.no_llama:
        log("llama-completion was not found: only our own runs (--llama-completion PATH adds it)")
    try:
        report = run_under_load(
            Path(args.target),
            Path(args.draft) if args.draft else None,
            binary,
            max_tokens=args.max_tokens,
            repeats=args.repeats,
            n_ctx=args.ctx,
            progress=log,
        )
    except (EngineError, RuntimeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return _emit(args, report, print_under_load_report)


def _emit(args: argparse.Namespace, report: dict, print_table) -> int:
    """The report as one JSON object (--json) or as a table for people."""
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print_table(report)
    return 0
