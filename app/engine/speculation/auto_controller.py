"""The speculation controller: each round, the draft length that maximises expected tokens per second.

For a draft of k tokens with per-position acceptance a_1..a_k (a_i = chance token i is accepted given the ones
before it were), a round yields E(k) = 1 + sum_j prod_{i<=j} a_i tokens and costs draft(k) + verify(k + 1)
seconds. k = 0 is plain decoding: one token for verify(1), no draft work at all.

- Costs come from a measured table (app.engine.speculation.costs), scaled online: one factor follows single-token rounds (the
  context growing, the machine getting busier), and each batch size used learns how far it is off relative to it.
  Only measured sizes are chosen; between them the real cost can be far above the interpolated line.
- Draft-model acceptance is a moving average per position, per chat. When it is too low to pay, speculation is
  probed now and then so it comes back when the text turns predictable, never at more than a tenth of the time
  spent paused (a draft model reads the text it is behind on first); when verifying costs more than even perfect
  acceptance would save (a CPU), it is not probed at all.
- N-gram proposals cost nothing, so every round scores the proposal against what the target produced, drafted
  or not: no probing is needed, and the estimates are grouped by the length of the match the proposal came from.
  They start afresh with each reply.
- History proposals (earlier requests' text, app.engine.speculation.history) cost nothing either and are scored the
  same way, with estimates of their own. Each round the drafter and length with the most expected tokens per second
  win: the draft model, n-gram lookup or history, or none.
- Each drafter's predictions are checked against what was accepted, and scaled down when they run high.
"""

from __future__ import annotations

from typing import Optional, Sequence

from app.engine.events import DraftSource
from app.engine.speculation.acceptance import MAX_K, Acceptance, CopyAcceptance
from app.engine.speculation.costs import MAX_BATCH, CostTable
from app.engine.speculation.online_costs import OnlineCosts
from app.engine.speculation.drafters import Draft
from app.engine.speculation.policy import Plan, PolicyState

# A draft model's drafts stay within this: each token costs a draft pass, and its acceptance falls with the position,
# where a copy that has been right over a long match stays right until the edit it is copying towards.
MODEL_MAX_K = 31
# A copy drafts past SHORT_MAX_K tokens only once its proposals have been right for LONG_COPY_RUN tokens in a row:
# then it drafts the rest of the passage at once, up to MAX_K. The match length alone does not tell it: right after
# an edit the n-gram drafter bridges the match across the edit (app.engine.speculation.drafters), and in the replay
# such 47-token drafts just past an edit kept 5 (docs/performance.md). A refused token starts the run over, so a
# copy that breaks drafts short again.
SHORT_MAX_K = 31
LONG_COPY_RUN = 32
OPTIMISTIC_ACCEPTANCE = 0.95
MAX_PROBE_GAP = 384
# A probe may add at most this share of the time spent paused since the last one: a draft model far behind the
# text (before drafting it reads every token since its last draft, the whole prompt at its first) waits until the
# probe is worth its catch-up. Without this, a 48-token reply under load lost 11% to one probe (docs/performance.md).
PROBE_SHARE = 0.1
# A copying drafter is probed only from a match this long: its proposals are scored every round anyway, and a
# 2-3 token match in new text is mostly coincidence. On new code under load each such probe (a batch of 3 at
# 2.8x one token) cost 3-4% of a 48-token reply (docs/performance.md); a copy's start is a longer match.
PROBE_MIN_MATCH = 4
# A draft model's acceptance before its first draft in a chat. A draft model shares the target's vocabulary and
# usually its family: Qwen2.5-Coder 0.5B kept 62-100% of a fixed k=4 for the 1.5B on six of the suite's seven
# prompts (35% on prose). At 0.7, an F16 target (memory-bound, where the draft model pays) never tried it on code
# (13.3-13.6 tok/s against 16.7-19.1 at 0.8, docs/performance.md); on a CPU-bound target even 0.8 is far from
# paying, so nothing changes there, and a draft model that is refused pauses after a round or two.
MODEL_PRIOR = 0.8
# Calibration before any draft: decayed sums (accepted, expected) as if two tokens had gone as expected.
_NO_CALIBRATION = (2.0, 2.0)
_CALIBRATION_FADE = 0.95  # per round without a draft: 14 such rounds halve what one refused draft did
# Where a draft model's draft stops by its own confidence (app.engine.local.decoding.model_drafter.acceptance_bound), per
# chat: raised after a draft the target refused past its first token (it should have stopped sooner), lowered after
# one that stopped early and was kept whole (it could have gone on).
STOP_BELOW_START = 0.3
STOP_BELOW_STEP = 0.03
STOP_BELOW_RANGE = (0.0, 0.9)


class AutoController:
    """Chooses drafter and k each round. Used from the engine process's main thread only.

    `with_model`: whether the draft model may draft, besides the copying drafters (n-gram lookup, history)."""

    uses_costs = True

    def __init__(self, costs: CostTable, with_model: bool, probe_every: int = 24):
        self.costs = costs
        self.with_model = with_model
        self.model = Acceptance(prior=MODEL_PRIOR)
        self._copies = CopyAcceptance()
        self.probe_every = probe_every
        # Rounds between probes double after each probe that did not pay (up to MAX_PROBE_GAP), so text that
        # stays unpredictable costs almost nothing; a probe that pays brings speculation back at once.
        self._probe_gap = probe_every
        self._paused_rounds = 0
        self._model_paused_rounds = 0  # the same, counted since the draft model last drafted or probed
        self._probing = False
        self.online = OnlineCosts(costs)
        self.stop_below = STOP_BELOW_START
        # Decayed sums of (accepted, expected) per drafter.
        self._calibration: dict[DraftSource, tuple[float, float]] = {
            "ngram": _NO_CALIBRATION,
            "history": _NO_CALIBRATION,
            "model": _NO_CALIBRATION,
        }

    def use_costs(self, table: CostTable) -> None:
        """Switch to a newly measured table (measured in idle time while this controller ran on an estimate)."""
        self.costs = table
        threads = self.online.threads
        self.online = OnlineCosts(table)
        self.online.note_threads(threads)

    def note_threads(self, threads: int) -> None:
        """The next rounds run on `threads` CPU threads: costs are compared at one count only."""
        self.online.note_threads(threads)

    @property
    def wants_fresh_costs(self) -> bool:
        """Single tokens run far faster than the measured table says: it was measured while the CPU was busy."""
        return self.online.table_stale

    def describe(self) -> PolicyState:
        return PolicyState(
            drafter="model" if self.with_model else "ngram",
            costs_estimated=self.costs.estimated,
            verify_s=tuple(self._verify(n) for n in range(1, MAX_BATCH + 1)),
            draft_s=self._draft(1),
            threads=self.online.threads,
            model_rates=tuple(self.model.rates),
            copy_rates=self._copies.first_rates(),
            calibration=tuple((source, self.calibration(source)) for source in self._calibration),
            stop_below=self.stop_below,
            probe_gap=self._probe_gap,
            paused_rounds=self._paused_rounds,
        )

    # -- the decision -------------------------------------------------------------------------------------------

    def _verify(self, n: int) -> float:
        return self.online.verify(n)

    def _draft(self, k: int) -> float:
        return self.online.draft(k)

    def ngram(self, match_len: int, source: DraftSource = "ngram") -> Acceptance:
        """The acceptance estimates of a copying drafter's ("ngram" or "history") proposals from matches of this
        length."""
        return self._copies.for_match(match_len, source)

    def calibration(self, source: DraftSource) -> float:
        """Accepted / expected over this source's recent drafts. Estimates are chosen when they look best, so
        they run high (text with a fixed pattern, such as JSON objects, looks copyable until each new value; see
        docs/performance.md)."""
        accepted, expected = self._calibration[source]
        return min(1.2, accepted / expected)

    def _estimates(
        self, source: DraftSource, k_max: int, rates: Sequence[float] | None, match_len: int
    ) -> tuple[Acceptance, Sequence[float] | None, float]:
        """(the estimates, the per-position rates to use, the calibration scale) for a draft by `source`."""
        acc = self.model if source == "model" else self.ngram(match_len, source)
        scale = 1.0 if rates is not None else self.calibration(source)
        if rates is None and source != "model" and match_len > 0:
            # Each accepted token lengthens the match: deeper positions take the rate of the longer match where
            # that has been seen, else this match's own estimate for the position.
            own = acc.rates
            rates = []
            for i in range(min(k_max, MAX_K)):
                longer = self.ngram(match_len + i, source)
                rates.append(longer.overall() if longer.known(0) else own[i])
        return acc, rates, scale

    def expected_accepted(self, plan: Plan) -> tuple[float, ...]:
        """For a draft plan of k tokens: the tokens expected kept with a draft of 1, 2, ..., k of them, by the
        estimates the plan was made with (what a batch weighs when it shortens drafts); () for other plans."""
        if plan.kind != "draft" or plan.k <= 0 or plan.drafter == "none":
            return ()
        acc, rates, scale = self._estimates(plan.drafter, plan.k, None, plan.match_len)
        return tuple(min(float(j), scale * (acc.expected_tokens(j, rates) - 1.0)) for j in range(1, plan.k + 1))

    def step_cost(self, rows: int, draft_tokens: int = 0) -> float:
        """Seconds a forward pass of `rows` rows costs now, plus `draft_tokens` passes of the draft model."""
        return self._verify(rows) + (self._draft(draft_tokens) if draft_tokens else 0.0)

    def catch_up_cost(self, behind: int) -> float:
        """Seconds the draft model takes to read the `behind` tokens it lacks before it drafts (the last of them is
        read by its first drafting pass), in batches at the target's batch shape."""
        if behind <= 1:
            return 0.0
        n = min(behind, MODEL_MAX_K + 1)
        per_token = self.costs.verify(n) / (n * self.costs.verify(1))
        return (behind - 1) * per_token * self._draft(1)

    def _best(
        self, source: DraftSource, k_max: int, rates: Sequence[float] | None, match_len: int = 0
    ) -> tuple[int, float, float]:
        """Best k >= 1 for this source, its expected tokens per second and expected accepted tokens. Given
        `rates` (a what-if), those are used as they are; otherwise the learned ones, corrected by calibration."""
        acc, rates, scale = self._estimates(source, k_max, rates, match_len)
        best_k, best_rate, best_accepted = 0, 0.0, 0.0
        for k in range(1, k_max + 1):
            if not self.costs.is_measured(k + 1):
                continue  # its cost is only a guess; the measured sizes either side are known
            draft_cost = self._draft(k) if source == "model" else 0.0
            accepted = min(float(k), scale * (acc.expected_tokens(k, rates) - 1.0))  # never more than drafted
            rate = (1.0 + accepted) / (draft_cost + self._verify(k + 1))
            if rate > best_rate:
                best_k, best_rate, best_accepted = k, rate, accepted
        return best_k, best_rate, best_accepted

    def plan(
        self,
        k_max: int,
        ngram_tokens: Sequence[int],
        has_model: bool,
        ngram_match: int = 0,
        history_draft: Optional[Draft] = None,
        model_behind: int = 0,
    ) -> Plan:
        plain_rate = 1.0 / self._verify(1)
        options: list[tuple[float, DraftSource, int, float]] = []
        copies: dict[DraftSource, tuple[int, int]] = {"ngram": (len(ngram_tokens), ngram_match)}
        if history_draft is not None and history_draft.tokens:
            copies["history"] = (len(history_draft.tokens), history_draft.match_len)
        for source, (proposed, match_len) in copies.items():
            if proposed:
                longest = MAX_K if self._copies.run(source) >= LONG_COPY_RUN else SHORT_MAX_K
                k, rate, accepted = self._best(source, min(k_max, proposed, longest), None, match_len)
                if k:
                    options.append((rate, source, k, accepted))
        use_model = has_model and self.with_model
        if use_model:
            k, rate, accepted = self._best("model", min(k_max, MODEL_MAX_K), None)
            if k:
                options.append((rate, "model", k, accepted))
        if k_max <= 0:
            return Plan("none", 0, "no room to speculate")
        if options:
            rate, source, k, accepted = max(options)
            threads = self.online.threads
            if rate > plain_rate and threads and not self.online.has_level:
                # Every expectation is against one token's time at this thread count: a draft before one was
                # timed is judged by the table alone, and a table measured while another program held the CPU
                # promised a draft model 4x where it gave 0.6x, with no plain round ever to show it.
                return Plan(
                    "none",
                    0,
                    f"timing one token at {threads} CPU thread{'s' if threads != 1 else ''} before drafting",
                    kind="timing",
                )
            if rate > plain_rate:
                self._paused_rounds = 0
                if source == "model":
                    self._model_paused_rounds = 0
                return Plan(
                    source,
                    k,
                    f"{source} draft of {k}: expected {rate / plain_rate:.2f}x plain",
                    copies[source][1] if source in copies else 0,
                    accepted,
                    kind="draft",
                    stop_below=self.stop_below if source == "model" else 0.0,
                )
        return self._paused(k_max, copies, use_model, plain_rate, model_behind)

    def _paused(
        self,
        k_max: int,
        copies: dict[DraftSource, tuple[int, int]],
        use_model: bool,
        plain_rate: float,
        model_behind: int,
    ) -> Plan:
        """`copies`: per copying drafter, (tokens proposed, match length)."""
        self._paused_rounds += 1
        self._model_paused_rounds += 1
        sources: list[DraftSource] = ["model"] if use_model else []
        sources += [s for s, (proposed, _) in copies.items() if proposed]
        if not sources:
            return Plan("none", 0, "nothing to draft from: no earlier text to copy and no draft model")
        optimistic = [OPTIMISTIC_ACCEPTANCE] * MAX_K
        limit = {s: copies[s][0] if s in copies else MODEL_MAX_K for s in sources}
        match = {s: copies[s][1] if s in copies else 0 for s in sources}
        hopeful = [
            s for s in sources if self._best(s, min(k_max, MAX_K, limit[s]), optimistic, match[s])[1] > plain_rate
        ]
        if not hopeful:
            return Plan("none", 0, self._why_costly(), kind="costly")
        if self._paused_rounds >= self._probe_gap:
            for source in hopeful:
                if source != "model" and match[source] < PROBE_MIN_MATCH:
                    continue
                k = min(2, k_max, limit[source])
                paused = self._model_paused_rounds if source == "model" else self._paused_rounds
                if self._probe_cost(source, k, model_behind) > PROBE_SHARE * paused * self._verify(1):
                    continue
                self._paused_rounds = 0
                if source == "model":
                    self._model_paused_rounds = 0
                self._probing = True
                return Plan(source, k, "probing: is the text predictable again?", match[source], kind="probe")
        acc = self.model if "model" in hopeful else self.ngram(match[hopeful[0]], hopeful[0])
        return Plan(
            "none",
            0,
            f"speculation paused: drafts are accepted too rarely to pay (acceptance {acc.overall():.0%})",
            kind="paused",
        )

    def _probe_cost(self, source: DraftSource, k: int, model_behind: int) -> float:
        """Seconds a probe of k tokens adds to a plain round; the draft model's includes reading what it is behind,
        in batches (at the target's batch shape)."""
        extra = self._verify(k + 1) - self._verify(1)
        if source == "model":
            extra += self._draft(k) + self.catch_up_cost(model_behind)
        return extra

    def _why_costly(self) -> str:
        ratio = self._verify(2) / self._verify(1)
        estimated = ", estimated until measured" if self.costs.estimated else ""
        text = (
            f"speculation paused: on this machine verifying costs more than it saves "
            f"(a batch of 2 costs {ratio:.2f}x one token"
        )
        if self.costs.draft_per_token and self.with_model:
            text += f", acceptance {self.model.overall():.0%}, draft cost {self._draft(1) / self._verify(1):.2f}x"
        return text + estimated + ")"

    # -- learning -----------------------------------------------------------------------------------------------

    def begin_request(self) -> None:
        """N-gram acceptance is about how this reply relates to its input (copied with a few edits, or with one on
        every line), which changes from request to request; the draft model's is about the kind of text, which a
        chat keeps. Copy statistics from a file copied whole would make a reply that edits every line draft far
        too long (docs/performance.md)."""
        self._copies.clear()
        self._calibration["ngram"] = self._calibration["history"] = _NO_CALIBRATION

    def observe(self, plan: Plan, drafted: int, accepted: int, draft_s: float, verify_s: float, rows: int = 0) -> None:
        if self._probing and plan.drafter != "none":
            self._probing = False
            paid = drafted > 0 and accepted == drafted
            self._probe_gap = self.probe_every if paid else min(self._probe_gap * 2, MAX_PROBE_GAP)
        if drafted and plan.drafter == "model":
            self.model.observe(drafted, accepted)
            self._adapt_stop(plan, drafted, accepted)
        if drafted and plan.expected > 0 and plan.drafter in self._calibration:
            was_accepted, was_expected = self._calibration[plan.drafter]
            self._calibration[plan.drafter] = (0.9 * was_accepted + accepted, 0.9 * was_expected + plan.expected)
        elif not drafted:
            # Rounds without a draft fade the evidence back towards none. Only drafts update it, so otherwise one
            # refused draft early in a reply could scale every later estimate down far enough that no draft is
            # tried again.
            for source, (was_accepted, was_expected) in self._calibration.items():
                self._calibration[source] = (
                    _CALIBRATION_FADE * was_accepted + (1 - _CALIBRATION_FADE) * _NO_CALIBRATION[0],
                    _CALIBRATION_FADE * was_expected + (1 - _CALIBRATION_FADE) * _NO_CALIBRATION[1],
                )
        self.online.observe(drafted, verify_s, draft_s if plan.drafter == "model" else 0.0, rows=rows)

    def _adapt_stop(self, plan: Plan, drafted: int, accepted: int) -> None:
        if not plan.stop_below:
            return
        low, high = STOP_BELOW_RANGE
        if 0 < accepted < drafted:
            self.stop_below = min(high, self.stop_below + STOP_BELOW_STEP)
        elif accepted == drafted < plan.k:
            self.stop_below = max(low, self.stop_below - STOP_BELOW_STEP)

    def observe_proposal(
        self, match_len: int, proposal: Sequence[int], produced: Sequence[int], source: DraftSource = "ngram"
    ) -> None:
        """Score a copying drafter's proposal (n-gram or history) against the tokens the round actually produced,
        whether or not it was drafted.

        Proposals cost nothing to make, so every round is evidence about them: speculation that is paused still
        learns that the reply has started copying its input, with no probing, and one unlucky draft cannot keep
        a kind of match written off.
        """
        self._copies.score(match_len, proposal, produced, source)
