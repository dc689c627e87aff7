"""The benchmark's report: one run's results per prompt and mode, as ratios against plain decoding and llama.cpp's
references (the JSON `bench --json` prints), and as the table `bench` prints for people."""

from __future__ import annotations

from app.bench.references import ref_label
from app.bench.suite import geometric_mean


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
