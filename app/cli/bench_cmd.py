"""`specchat-cli bench`: plain vs speculative decoding side by side, as ratios measured in one run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional

from app.bench.references import ref_label
from app.bench.suite import geometric_mean
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
    from app.cli.generate_cmd import models_problem
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
    from app.cli.generate_cmd import local_load_settings, local_model
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
    from app.cli.generate_cmd import local_load_settings, local_model
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


def build_report(results, reference, prompts, k: int) -> dict:
    rows = []
    for prompt in prompts:
        modes = results[prompt.name]
        row = {"prompt": prompt.name, "kind": prompt.kind, "modes": {m: r.to_dict() for m, r in modes.items()}}
        row["ratio_vs_plain"] = {m: round(r.median_ratio(modes["plain"]), 3) for m, r in modes.items() if m != "plain"}
        for kind, per_prompt in reference.items():
            ref = per_prompt.get(prompt.name)
            if not ref or not ref.tokens_per_second:
                continue
            own = modes.get(f"{kind} k={k}")
            auto = modes.get("auto") if kind.startswith("ngram") else None
            # Our product's answer to llama.cpp's n-gram modes is auto, not a fixed k that drafts on any match.
            entry = ref.summary(
                k,
                modes["plain"].tokens_per_second,
                own.tokens_per_second if own else None,
                auto.tokens_per_second if auto else None,
                own.median_acceptance if own else 0.0,
            )
            row.setdefault("llama_cpp", {})[kind] = entry
        rows.append(row)
    overall = {}
    for mode in rows[0]["ratio_vs_plain"] if rows else []:
        ratios = [r["ratio_vs_plain"][mode] for r in rows]
        overall[mode] = {
            "geomean_ratio_vs_plain": round(geometric_mean(ratios), 3),
            "min": min(ratios),
            "max": max(ratios),
        }
    for kind in reference:
        ratios = [
            r["llama_cpp"][kind]["ours_vs_llama_cpp"]
            for r in rows
            if "ours_vs_llama_cpp" in r.get("llama_cpp", {}).get(kind, {})
        ]
        if ratios:
            overall.setdefault("ours_vs_llama_cpp", {})[kind] = {
                "geomean": round(geometric_mean(ratios), 3),
                "min": min(ratios),
            }
        autos = [
            r["llama_cpp"][kind]["auto_vs_llama_cpp"]
            for r in rows
            if "auto_vs_llama_cpp" in r.get("llama_cpp", {}).get(kind, {})
        ]
        if autos:
            key = "auto_vs_llama_cpp_ngram" if kind == "ngram" else f"auto_vs_llama_cpp_{kind}"
            overall[key] = {"geomean": round(geometric_mean(autos), 3), "min": min(autos)}
    # Auto against the best of every other setting on each prompt (ours and llama.cpp's): auto's promise is to
    # be as fast as the best setting one could have picked by hand. Against llama.cpp's n-gram modes, over the
    # stretch each of them wrote.
    against_best = []
    for row in rows:
        if "auto" not in row["ratio_vs_plain"]:
            continue
        auto = row["ratio_vs_plain"]["auto"]
        against = [auto / max([1.0] + [v for m, v in row["ratio_vs_plain"].items() if m != "auto"])]
        for ref in row.get("llama_cpp", {}).values():
            if "auto_vs_llama_cpp" in ref:
                against.append(ref["auto_vs_llama_cpp"])
            elif ref["ratio_vs_plain"] > 0:
                against.append(auto / ref["ratio_vs_plain"])
        row["auto_vs_best"] = round(min(against), 3)
        against_best.append(row["auto_vs_best"])
    if against_best:
        overall["auto_vs_best"] = {"geomean": round(geometric_mean(against_best), 3), "min": min(against_best)}
    # What choosing one setting per prompt by hand, knowing every result, would reach: the yardstick for a goal
    # such as "auto at 1.2x plain overall" (llama.cpp's ratios over the stretch each wrote).
    for row in rows:
        ratios = list(row["ratio_vs_plain"].values())
        ratios += [ref["ratio_vs_plain"] for ref in row.get("llama_cpp", {}).values()]
        row["best_in_hindsight"] = max([1.0] + ratios)
    if rows and any(len(row["modes"]) > 1 for row in rows):
        best = [row["best_in_hindsight"] for row in rows]
        overall["best_in_hindsight"] = {"geomean": round(geometric_mean(best), 3), "min": min(best), "max": max(best)}
    return {"k": k, "prompts": rows, "overall": overall}


def print_report(report: dict) -> None:
    if report.get("llama_cpp_build"):
        print(f"llama.cpp build: {report['llama_cpp_build']}")
    _print_pass(report)
    if "second_pass" in report:
        print("\n== second pass: drawing on the history the first pass left ==")
        _print_pass(report["second_pass"])


def _print_pass(report: dict) -> None:
    rows = report["prompts"]
    if not rows:
        print("no prompts")
        return
    modes = list(rows[0]["modes"])
    header = f"{'prompt':<12} " + " ".join(f"{m:>22}" for m in modes)
    ref_kinds = [
        kind
        for kind in ("draft", "ngram", "ngram-mod", "ngram-map-k")
        if any(kind in r.get("llama_cpp", {}) for r in rows)
    ]
    for kind in ref_kinds:
        header += f" {'llama.cpp ' + ref_label(kind, report['k']):>24} {'ours/llama':>10}"
    print("\nmedian tok/s (acceptance) [median of paired ratios vs plain]")
    print(header)
    for row in rows:
        cells = []
        for mode in modes:
            m = row["modes"][mode]
            if mode == "plain":
                cells.append(f"{m['tokens_per_second']:>22.1f}")
            else:
                text = f"{m['tokens_per_second']:.1f} ({m['acceptance_rate']:.0%}) [{row['ratio_vs_plain'][mode]:.2f}x]"
                cells.append(f"{text:>22}")
        line = f"{row['prompt']:<12} " + " ".join(cells)
        for kind in ref_kinds:
            ref = row.get("llama_cpp", {}).get(kind)
            if ref is None:
                line += f" {'-':>24} {'-':>10}"
                continue
            text = f"{ref['tokens_per_second']:.1f} ({ref['acceptance_rate']:.0%}) [{ref['ratio_vs_plain']:.2f}x]"
            mine = ref.get("ours_vs_llama_cpp", ref.get("auto_vs_llama_cpp", 0))
            line += f" {text:>24} {mine:>9.2f}x"
        print(line)
    if any("llama_cpp" in r for r in rows):
        print("(ours/llama: our fixed-k mode of the same kind over llama.cpp's; for ngram-mod and ngram-map-k, auto)")
        longer = sorted(
            {
                f"{r['prompt']} {ref_label(kind, report['k'])}"
                for r in rows
                for kind, ref in r.get("llama_cpp", {}).items()
                if "same_stretch" in ref
            }
        )
        if longer:
            print(
                "(llama.cpp wrote past --max-tokens, by what it drafted, on: " + ", ".join(longer) + "; its ratios "
                "there are against ours run again over as many tokens)"
            )
    _print_thinking(rows, modes)
    if "auto" in modes:
        print("\nauto: chosen draft length per round (k: rounds)")
        for row in rows:
            hist = row["modes"]["auto"]["draft_len_histogram"]
            print(f"  {row['prompt']:<12} " + ", ".join(f"{k}: {v}" for k, v in hist.items()))
    print("\noverall (geometric mean of ratios vs plain; min, max)")
    for mode, o in report["overall"].items():
        if mode == "ours_vs_llama_cpp":
            for kind, ratio in o.items():
                print(
                    f"  ours/llama.cpp, {kind} mode at k={report['k']}: {ratio['geomean']:.2f}x "
                    f"(min {ratio['min']:.2f}x)"
                )
        elif mode == "auto_vs_llama_cpp_ngram":
            print(f"  auto/llama.cpp's n-gram mode at k={report['k']}: {o['geomean']:.2f}x (min {o['min']:.2f}x)")
        elif mode.startswith("auto_vs_llama_cpp_"):
            print(
                f"  auto/llama.cpp's {mode.removeprefix('auto_vs_llama_cpp_')}: {o['geomean']:.2f}x "
                f"(min {o['min']:.2f}x)"
            )
        elif mode == "auto_vs_best":
            print(f"  auto/the best other setting per prompt: {o['geomean']:.2f}x (min {o['min']:.2f}x)")
        elif mode == "best_in_hindsight":
            print(
                f"  the best setting per prompt, picked knowing every result: {o['geomean']:.2f}x plain "
                f"(min {o['min']:.2f}x, max {o['max']:.2f}x)"
            )
        else:
            print(f"  {mode:<10} {o['geomean_ratio_vs_plain']:.2f}x  (min {o['min']:.2f}x, max {o['max']:.2f}x)")


def _print_thinking(rows: list, modes: list) -> None:
    """Where replies thought: tokens, tok/s and acceptance by drafter of the thinking and of the answer."""
    if not any("thinking" in row["modes"][mode] for row in rows for mode in modes):
        return
    print(
        "\nthinking | answer: tokens, tok/s, acceptance by drafter (all repetitions); answer tokens copied from "
        "the reasoning"
    )
    for row in rows:
        for mode in modes:
            split = row["modes"][mode].get("thinking")
            if split is None:
                continue
            cells = []
            for part in ("reasoning", "answer"):
                p = split[part]
                drafts = ", ".join(f"{d} {v['acceptance_rate']:.0%}" for d, v in p["by_drafter"].items())
                cell = f"{p['tokens']} tok, {p['tokens_per_second']:.1f} tok/s"
                cells.append(f"{cell} ({drafts})" if drafts else cell)
            print(
                f"  {row['prompt']:<12} {mode:<10} {cells[0]} | {cells[1]}; copied "
                f"{split['answer_copied_from_reasoning']}"
            )
