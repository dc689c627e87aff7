"""Replay recorded greedy replies through the real NgramDrafter and AutoController, with recorded costs.

Tuning the controller against live benchmarks is slow and noisy: on the 2-core CPU plain decoding alone varies
24-30 tok/s within one run, so one repetition's ratio moves by about ±0.15x. Greedy replies do not depend on how
they were drafted, so each bench prompt's reply is recorded once (token ids); a replay then plays every round
(propose, plan, accept the proposal's agreement with the recorded reply, observe) and charges it the cost of its
verify batch. It is deterministic and takes a fraction of a second for the whole suite. Its ratios are for
comparing policies, not promises: against live runs it came out within 0.03x on prompts that hardly draft and up to
0.15x high on the copied bug fix (1.59x predicted, 1.44x live), because single tokens got cheaper on a quieter
machine while batches did not.

Three recordings: the bench suite's prompts, which the controller was tuned on, ten more code-editing prompts
(tests/perf/edit_prompts.json: renames, docstrings, a new parameter, a JSON key, a bug in JavaScript...) that it was
not, and five edits whose replies explain before they copy (tests/perf/explain_edit_prompts.json: a bug fix, a
retry, a YAML config, an SQL query, a class review). A change that only helps the suite's three editing replies
shows up as a loss on the other sets: on replies of 100-300 tokens, most knobs move single prompts by 0.1x either
way.

    python -m tests.perf.replay                 # ratio vs plain per prompt, and the best any policy could do
    python -m tests.perf.replay --tokens 64     # the same over each reply's first 64 tokens (bench --max-tokens)
    python -m tests.perf.replay --record MODEL  # record the replies and the cost table again (needs the model)
    python -m tests.perf.replay --record MODEL --only explain   # record one set, with the suite's cost table
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Callable

from app.bench.suite import geometric_mean
from app.engine.speculation.auto_controller import MAX_K, AutoController
from app.engine.speculation.costs import MAX_BATCH, MEASURED_SIZES, CostTable
from app.engine.speculation.drafters import NgramDrafter
from app.engine.speculation.history import HistoryDrafter
from app.engine.speculation.policy import agreement
from app.engine.speculation.rounds import copy_tokens, draft_ceiling, observe_round, plan_round
from tests.perf.llama_ngram import replay_llama

RECORDING = Path(__file__).with_name("replies-qwen2.5-coder-1.5b.json")
HELD_OUT = Path(__file__).with_name("replies-edits-qwen2.5-coder-1.5b.json")
HELD_OUT_PROMPTS = Path(__file__).with_name("edit_prompts.json")
EXPLAIN = Path(__file__).with_name("replies-explain-qwen2.5-coder-1.5b.json")
EXPLAIN_PROMPTS = Path(__file__).with_name("explain_edit_prompts.json")
AGENT = Path(__file__).with_name("replies-agent-qwen2.5-coder-1.5b.json")
# Agent turns: a file read through a tool, then an Edit or Write call whose arguments copy it, JSON-escaped.
AGENT_PROMPTS = Path(__file__).with_name("agent_edit_prompts.json")
# (recording, the prompts it was recorded from (None: the bench suite's), what to call it)
RECORDINGS = (
    (RECORDING, None, "bench suite"),
    (HELD_OUT, HELD_OUT_PROMPTS, "held-out editing prompts"),
    (EXPLAIN, EXPLAIN_PROMPTS, "edits that explain first"),
    (AGENT, AGENT_PROMPTS, "agent edits"),
)
MAX_TOKENS = 400


def generation_bias(n: int) -> float:
    """Batch costs during generation relative to the load-time table (traced on the 2-core CPU): small batches
    within a few percent, 16 and more about 15% dearer (caches are colder between rounds than in the table's
    back-to-back timing). Single tokens are the unit."""
    return 1.0 if n == 1 else 1.03 if n <= 6 else 1.10 if n <= 12 else 1.15


class Recording:
    def __init__(self, path: Path = RECORDING, tokens: int | None = None, escaped: bool = True):
        """`tokens`: replay only each reply's first this many tokens (the bench's --max-tokens); `escaped` False:
        the n-gram lookup searches no escaped copy of the prompt (as before it did)."""
        self.escaped = escaped
        data = json.loads(path.read_text(encoding="utf-8"))
        self.model = data["model"]
        costs, measured = list(data["costs"]), tuple(data["measured"])
        if len(costs) <= MAX_BATCH:
            # Recorded before batches went past 32: the sizes since added follow the table's own extrapolation
            # (the last measured segment's cost per token), marked as such in the printout.
            self.extrapolated = tuple(n for n in MEASURED_SIZES if n >= len(costs))
            table = CostTable(batch=costs)
            costs = [table.verify(n) if n else 0.0 for n in range(MAX_BATCH + 1)]
            measured += self.extrapolated
        else:
            self.extrapolated = ()
        self.table = CostTable(batch=costs, measured=measured)
        self.prompts: dict[str, dict] = data["prompts"]
        if tokens is not None:
            for entry in self.prompts.values():
                entry["reply"] = entry["reply"][:tokens]

    def cost(self, n: int) -> float:
        return self.table.verify(n) * generation_bias(n)

    def drafter(self, name: str) -> NgramDrafter:
        control = set(self.prompts[name]["control"])
        # The prompt's escaped copy, made by the model's tokenizer when the reply was recorded.
        copy = self.prompts[name].get("escaped", []) if self.escaped else []
        drafter = NgramDrafter(is_control=control.__contains__, escape=(lambda _prompt: list(copy)) if copy else None)
        drafter.start_reply(len(self.prompts[name]["prompt"]))
        return drafter


def history_of(rec: Recording) -> HistoryDrafter:
    """The history a second pass would draw on: every prompt of the recording with its reply (bench --second-pass)."""
    past = HistoryDrafter()
    for key, entry in enumerate(rec.prompts.values()):
        past.add(key, "replay", entry["prompt"] + entry["reply"])
    return past


def replay(
    rec: Recording,
    name: str,
    make_policy: Callable[[CostTable], AutoController] | None = None,
    past: HistoryDrafter | None = None,
) -> float:
    """Auto's predicted ratio over plain for one prompt; with `past`, drawing on that history as well."""
    """Predicted auto / plain tokens-per-second ratio for one recorded reply."""
    prompt, reply = rec.prompts[name]["prompt"], rec.prompts[name]["reply"]
    policy = (make_policy or (lambda table: AutoController(table, with_model=False)))(rec.table)
    drafter = rec.drafter(name)
    policy.begin_request()
    emitted, spent = 0, 0.0
    while emitted < len(reply):
        k_max = draft_ceiling(MAX_TOKENS - emitted - 1, emitted)
        # The decoder's own round bookkeeping (app.engine.speculation.rounds); only verifying is replaced by the recording.
        plan, proposals = plan_round(
            policy, prompt + reply[:emitted], k_max, speculative=True, ngram=drafter, has_model=False, past=past
        )
        draft = copy_tokens(plan, proposals)
        accepted = agreement(draft, reply[emitted:])
        kept = reply[emitted : emitted + accepted + 1]
        seconds = rec.cost(len(draft) + 1)
        spent += seconds
        observe_round(policy, plan, proposals, len(draft), accepted, 0.0, seconds, kept)
        emitted += len(kept)
    return len(reply) * rec.cost(1) / spent


def llama_modes(rec: Recording, name: str) -> dict[str, float]:
    """llama.cpp's long-copy n-gram modes on the same reply and costs (tests/perf/llama_ngram.py)."""
    prompt, reply = rec.prompts[name]["prompt"], rec.prompts[name]["reply"]
    return {kind: replay_llama(prompt, reply, kind, rec.cost) for kind in ("ngram-map-k", "ngram-mod")}


def best_possible(rec: Recording, name: str) -> float:
    """The ratio of a policy that knew in advance how much of each proposal is right (same proposals, same costs):
    what any draft-length policy could reach with this drafter."""
    prompt, reply = rec.prompts[name]["prompt"], rec.prompts[name]["reply"]
    drafter = rec.drafter(name)
    right, lengths = [], []
    for at in range(len(reply)):
        proposal = drafter.propose(prompt + reply[:at], MAX_K)
        right.append(agreement(proposal.tokens, reply[at:]))
        lengths.append(len(proposal.tokens))
    n = len(reply)
    fastest = [0.0] * (n + 1)  # fastest[i]: least time to write reply[i:]
    for at in range(n - 1, -1, -1):
        options = [rec.cost(1) + fastest[at + 1]]
        for k in range(1, lengths[at] + 1):
            if rec.table.is_measured(k + 1):
                options.append(rec.cost(k + 1) + fastest[min(n, at + min(right[at], k) + 1)])
        fastest[at] = min(options)
    return n * rec.cost(1) / fastest[0]


def record(model_path: str, only: str | None = None) -> None:
    """Record every prompt's greedy reply (see RECORDINGS) and the model's measured cost table (minutes on a
    CPU). `only`: record just the recordings whose title contains this word, with the bench suite recording's cost
    table (measuring it again would make the sets' figures differ by the machine's load that minute)."""
    from app.engine.config import GenerationConfig, LoadSettings
    from app.engine.local.engine import SpecEngine

    engine = SpecEngine(LoadSettings(n_ctx=4096, n_threads=2))
    engine.load_target(model_path)
    if only:
        suite = json.loads(RECORDING.read_text(encoding="utf-8"))
        costs, measured = suite["costs"], suite["measured"]
    else:
        table = engine.measure_costs(with_draft=False)
        costs, measured = table.batch, list(table.measured or ())
    config = GenerationConfig(max_tokens=MAX_TOKENS, temperature=0.0, speculative=False)
    for path, prompts_file, title in RECORDINGS:
        if only and only not in title:
            continue
        prompts = {}
        for name, kind, messages, tools in _requests(prompts_file):
            asked = dataclasses.replace(config, tools=tools)
            for _ in engine.chat(messages, asked, session="record"):
                pass
            written = engine.prompts.transcript_tokens
            rendered = engine.prompts.render(messages, json.loads(tools or "[]"), asked)
            prompt = engine.prompts.tokens_for(rendered.text, rendered.markup)
            reply = written[len(prompt) :]
            control = sorted(t for t in set(prompt) if engine.target.is_control(t))
            escaped = engine.target.json_escaped(prompt[-NgramDrafter.ESCAPED_PROMPT_MAX :])
            prompts[name] = {"kind": kind, "prompt": prompt, "reply": reply, "control": control, "escaped": escaped}
        data = {"model": Path(model_path).name, "costs": costs, "measured": measured, "prompts": prompts}
        path.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")


def _requests(prompts_file: Path | None) -> list[tuple[str, str, list[dict], str]]:
    """(name, kind, messages, tools as JSON) of each prompt: a bench prompts file's single user message, or an
    agent set's whole conversation with its tools."""
    from app.bench.suite import load_prompts

    if prompts_file is not None and "messages" in json.loads(prompts_file.read_text(encoding="utf-8"))[0]:
        entries = json.loads(prompts_file.read_text(encoding="utf-8"))
        return [(e["name"], e["kind"], e["messages"], json.dumps(e["tools"])) for e in entries]
    return [(p.name, p.kind, [{"role": "user", "content": p.chat}], "") for p in load_prompts(prompts_file)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", metavar="MODEL", help="record the replies and costs again with this GGUF")
    parser.add_argument("--only", metavar="WORD", help="with --record: record only the sets whose title has WORD")
    parser.add_argument("--tokens", type=int, metavar="N", help="replay only each reply's first N tokens")
    args = parser.parse_args()
    if args.record:
        record(args.record, args.only)
    for path, _, title in RECORDINGS:
        if not path.exists():
            print(f"{title}: not recorded yet (--record MODEL --only WORD records it)")
            continue
        rec = Recording(path, args.tokens)
        print(
            f"{rec.model}, {title}: predicted auto vs plain (best possible with these proposals), auto over "
            f"the best possible; a second pass with every reply in history; llama.cpp's ngram-map-k and "
            f"ngram-mod modes (tests/perf/llama_ngram.py)"
        )
        if rec.extrapolated:
            print(f"  (batches of {', '.join(map(str, rec.extrapolated))} extrapolated from the recorded table)")
        ratios, best, second, llama = [], [], [], []
        past = history_of(rec)
        for name in rec.prompts:
            ratios.append(replay(rec, name))
            best.append(best_possible(rec, name))
            second.append(replay(rec, name, past=past))
            modes = llama_modes(rec, name)
            llama.append(max(modes.values()))
            print(
                f"  {name:17s} {ratios[-1]:5.2f}x  ({best[-1]:.2f}x) {ratios[-1] / best[-1]:4.2f}  second pass "
                f"{second[-1]:5.2f}x  map-k {modes['ngram-map-k']:4.2f}x  mod {modes['ngram-mod']:4.2f}x"
            )
        of_best = [r / b for r, b in zip(ratios, best)]
        print(
            f"  {'geomean':17s} {geometric_mean(ratios):5.2f}x  ({geometric_mean(best):.2f}x) "
            f"{geometric_mean(of_best):4.2f} (least {min(of_best):.2f})  second pass {geometric_mean(second):5.2f}x  "
            f"auto over llama.cpp's better mode {geometric_mean([r / x for r, x in zip(ratios, llama)]):.2f} "
            f"(least {min(r / x for r, x in zip(ratios, llama)):.2f})"
        )


if __name__ == "__main__":
    main()
