"""`specchat-cli bench`: every mode side by side, ratios paired per repetition."""

from __future__ import annotations

import json

import pytest

from app.cli import main
from app.bench.report import build_report, print_report
from app.bench.suite import BenchPrompt, ModeResult


def test_bench_runs_the_chosen_modes_and_reports_ratios(tiny_models, capsys):
    code = main(
        [
            "bench",
            "--target",
            str(tiny_models.target),
            "--draft",
            str(tiny_models.draft_identical),
            "--modes",
            "draft,auto",
            "--only",
            "code-edit",
            "--repeats",
            "2",
            "--max-tokens",
            "16",
            "--threads",
            "1",
            "--json",
            "--no-llama",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    row = report["prompts"][0]
    assert row["prompt"] == "code-edit"
    assert set(row["modes"]) == {"plain", "draft k=4", "auto"}  # no n-gram mode: not asked for
    assert all(len(m["runs_tokens_per_second"]) == 2 for m in row["modes"].values())
    # The identical draft is always right: the fixed-k mode accepted everything it drafted.
    assert row["modes"]["draft k=4"]["acceptance_rate"] == 1.0
    assert row["ratio_vs_plain"]["draft k=4"] > 0 and "auto" in report["overall"]
    # The report names what the llama.cpp build was compiled for, so figures from two builds are not mixed up.
    assert "AVX" in report["llama_cpp_build"] or "NEON" in report["llama_cpp_build"]


def test_auto_is_set_against_the_draft_model_at_every_length_asked_for(tiny_models, capsys):
    """Issue 22's bar: auto against the fixed draft model at k = 2, 4 and 8, on each prompt."""
    code = main(
        [
            "bench",
            "--target",
            str(tiny_models.target),
            "--draft",
            str(tiny_models.draft_identical),
            "--modes",
            "draft,auto",
            "--draft-k",
            "2,8",
            "--only",
            "code-edit",
            "--repeats",
            "1",
            "--max-tokens",
            "12",
            "--threads",
            "1",
            "--json",
            "--no-llama",
        ]
    )
    assert code == 0
    row = json.loads(capsys.readouterr().out)["prompts"][0]
    assert set(row["modes"]) == {"plain", "draft k=2", "draft k=4", "draft k=8", "auto"}
    best = max([1.0] + [v for m, v in row["ratio_vs_plain"].items() if m != "auto"])
    assert abs(row["auto_vs_best"] - row["ratio_vs_plain"]["auto"] / best) < 0.01


def test_bad_draft_lengths_are_refused_with_what_is_expected(tiny_models, capsys):
    for value in ("2,x", "0,8"):
        assert (
            main(["bench", "--target", str(tiny_models.target), "--draft", str(tiny_models.draft), "--draft-k", value])
            == 2
        )
        assert "--draft-k takes draft lengths from 1 to" in capsys.readouterr().err
    assert main(["bench", "--target", str(tiny_models.target), "--draft-k", "2"]) == 2
    assert "--draft-k needs --draft" in capsys.readouterr().err


def test_unknown_mode_is_refused(tiny_models, capsys):
    assert main(["bench", "--target", str(tiny_models.target), "--modes", "plain,fast"]) == 2
    assert "unknown mode fast" in capsys.readouterr().err


def test_ratios_pair_each_repetition_with_its_own_plain_run():
    # The machine got faster after the first repetition, and the third auto run was disturbed. Paired with the
    # plain run of its own repetition, auto is 1.1x in two of three; the ratio of the medians would say 0.73x.
    plain = ModeResult(tokens_per_second=[20.0, 30.0, 31.0])
    auto = ModeResult(tokens_per_second=[22.0, 33.0, 22.0])
    report = build_report({"p": {"plain": plain, "auto": auto}}, {}, [BenchPrompt("p", "code", "x")], 4)
    assert report["prompts"][0]["ratio_vs_plain"]["auto"] == 1.1


def test_the_report_says_what_the_best_setting_per_prompt_would_reach(capsys):
    """A goal such as "auto 1.2x overall" is set against what picking one setting per prompt by hand, knowing every
    result, would reach: here 1.44x on the copy (n-gram) and 1.0x on prose, where plain was best."""
    plain = ModeResult(tokens_per_second=[20.0, 20.0])
    copy = {
        "plain": plain,
        "ngram k=4": ModeResult(tokens_per_second=[28.8, 28.8]),
        "auto": ModeResult(tokens_per_second=[28.0, 28.0]),
    }
    prose = {
        "plain": plain,
        "ngram k=4": ModeResult(tokens_per_second=[18.0, 18.0]),
        "auto": ModeResult(tokens_per_second=[19.0, 19.0]),
    }
    prompts = [BenchPrompt("copy", "code", "x"), BenchPrompt("prose", "prose", "y")]
    report = build_report({"copy": copy, "prose": prose}, {}, prompts, 4)
    assert [row["best_in_hindsight"] for row in report["prompts"]] == [1.44, 1.0]
    assert report["overall"]["best_in_hindsight"]["geomean"] == 1.2
    print_report(report)
    assert "the best setting per prompt, picked knowing every result: 1.20x plain" in capsys.readouterr().out


FAKE_LLAMA = """#!/usr/bin/env python3
import sys
with open(sys.argv[0] + ".calls", "a") as log:
    log.write(" ".join(a for a in sys.argv[1:] if "\\n" not in a) + "\\n")
ngram = "ngram-simple" in sys.argv
print("decoded  16 tokens in 0.5 seconds, speed: %s t/s" % ("40.0" if ngram else "20.0"), file=sys.stderr)
print("n_drafted = 10", file=sys.stderr)
print("n_accept  = %d" % (9 if ngram else 5), file=sys.stderr)
"""


@pytest.mark.slow
def test_llama_cpp_runs_the_same_modes_at_the_same_k(tiny_models, tmp_path, capsys):
    """Its draft-model mode is compared with our fixed-k draft mode, its n-gram mode with our fixed-k n-gram mode."""
    fake = tmp_path / "llama-speculative-simple"
    fake.write_text(FAKE_LLAMA)
    fake.chmod(0o755)
    code = main(
        [
            "bench",
            "--target",
            str(tiny_models.target),
            "--draft",
            str(tiny_models.draft_identical),
            "--ngram",
            "--modes",
            "draft,ngram,auto",
            "--only",
            "code-edit",
            "--repeats",
            "1",
            "--max-tokens",
            "8",
            "--threads",
            "1",
            "--k",
            "3",
            "--llama-spec",
            str(fake),
        ]
    )
    assert code == 0
    calls = (tmp_path / "llama-speculative-simple.calls").read_text().splitlines()
    assert len(calls) == 4
    by_type = {call.split("--spec-type ")[1].split()[0]: call for call in calls}
    assert set(by_type) == {"draft-simple", "ngram-simple", "ngram-mod", "ngram-map-k"}
    assert "-md" in by_type["draft-simple"].split()
    assert "-md" not in by_type["ngram-simple"].split() and "--spec-draft-n-max 3" in by_type["ngram-simple"]
    # ngram-mod and ngram-map-k choose their own draft lengths.
    assert "--spec-draft-n-max" not in by_type["ngram-mod"] and "--spec-draft-n-max" not in by_type["ngram-map-k"]
    out = capsys.readouterr().out
    assert "llama.cpp draft k=3" in out and "llama.cpp ngram k=3" in out and "llama.cpp ngram-mod" in out
    assert "ours/llama.cpp, ngram mode at k=3" in out and "ours/llama.cpp, draft mode at k=3" in out
    assert "auto/llama.cpp's n-gram mode at k=3" in out and "auto/llama.cpp's ngram-map-k" in out
    assert "auto/the best other setting per prompt" in out


def test_a_second_pass_draws_on_the_history_the_first_one_left(tiny_models, capsys):
    code = main(
        [
            "bench",
            "--target",
            str(tiny_models.target),
            "--only",
            "code-edit",
            "--repeats",
            "1",
            "--max-tokens",
            "24",
            "--threads",
            "1",
            "--k",
            "8",
            "--no-llama",
            "--second-pass",
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    first, second = report["prompts"][0], report["second_pass"]["prompts"][0]
    assert "history k=8" not in first["modes"]
    history = second["modes"]["history k=8"]
    # The second pass's reply is the first pass's reply, drafted from history: nearly every draft is kept.
    assert history["acceptance_rate"] > 0.9 and second["modes"]["plain"]["tokens"] == first["modes"]["plain"]["tokens"]
    rounds = sum(history["draft_len_histogram"].values())
    assert rounds <= history["tokens"][0] / 3  # most rounds kept a whole draft of up to 8


def test_plain_vs_native_compares_the_same_prompt_with_llama_completion(tiny_models, capsys):
    """Both sides read the same tokens, and the report holds the three paired ratios."""
    import pytest

    from app.bench.suite import find_reference_tool

    if find_reference_tool("llama-completion") is None:
        pytest.skip("llama.cpp's llama-completion is not built (../shared/tools/build-llama-reference.sh)")
    code = main(
        [
            "bench",
            "--target",
            str(tiny_models.target),
            "--plain-vs-native",
            "--repeats",
            "2",
            "--long-repeats",
            "1",
            "--max-tokens",
            "8",
            "--threads",
            "1",
            "--json",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert len(report["plain_vs_llama"]["ratios"]) == 2 and report["plain_vs_llama"]["median"] > 0
    assert report["sampling_vs_greedy"]["median"] > 0
    tokens = report["long_prompt"]["prompt_tokens"]
    assert tokens["ours"] == tokens["llama"] > 100


def test_plain_vs_native_says_when_llama_completion_is_missing(tiny_models, tmp_path, capsys):
    code = main(
        [
            "bench",
            "--target",
            str(tiny_models.target),
            "--plain-vs-native",
            "--llama-completion",
            str(tmp_path / "nowhere"),
        ]
    )
    assert code == 2
    assert "no such file" in capsys.readouterr().err


def test_a_reference_run_that_loses_its_timings_is_run_again(tmp_path):
    """llama.cpp's tools can exit 0 with their timings unprinted on a busy machine: the bench runs them again
    instead of failing, and a real failure (non-zero exit) is reported at once with the tool's name."""
    import pytest

    from app.bench.suite import run_reference_tool

    counter = tmp_path / "runs"
    tool = tmp_path / "llama-fake"
    tool.write_text(
        '#!/bin/sh\necho x >> "$1"\nif [ $(wc -l < "$1") -ge 2 ]; then echo \'eval time = 5 ms\' >&2; fi\nexit "$2"\n'
    )
    tool.chmod(0o755)
    out = run_reference_tool([str(tool), str(counter), "0"], reports=lambda text: "eval time" in text, timeout_s=30)
    assert "eval time" in out and len(counter.read_text().splitlines()) == 2
    counter.unlink()
    with pytest.raises(RuntimeError, match=r"llama-fake failed \(exit 3\)"):
        run_reference_tool([str(tool), str(counter), "3"], reports=lambda text: "eval time" in text, timeout_s=30)
    assert len(counter.read_text().splitlines()) == 1


FAKE_LONG_LLAMA = """#!/usr/bin/env python3
import sys
n = int(sys.argv[sys.argv.index("-n") + 1])
# Like llama-speculative-simple: -n bounds what its target samples itself, so drafting writes past it.
written = n + 8 if "ngram-simple" in sys.argv else n + 1
print("decoded %d tokens in 0.5 seconds, speed: %.1f t/s" % (written, written / 0.5), file=sys.stderr)
print("n_drafted = 10", file=sys.stderr)
print("n_accept  = 9", file=sys.stderr)
"""


@pytest.mark.slow
def test_a_reference_that_wrote_more_than_ours_is_compared_with_ours_over_as_many_tokens(tiny_models, tmp_path, capsys):
    """llama-speculative-simple writes past -n by what it drafted: on code-fix that stretch was the copied file our
    64-token runs never reached. Ours run again over its stretch, and its ratios come from those pairs."""
    fake = tmp_path / "llama-speculative-simple"
    fake.write_text(FAKE_LONG_LLAMA)
    fake.chmod(0o755)
    code = main(
        [
            "bench",
            "--target",
            str(tiny_models.target),
            "--ngram",
            "--modes",
            "ngram,auto",
            "--only",
            "code-edit",
            "--repeats",
            "2",
            "--max-tokens",
            "8",
            "--threads",
            "1",
            "--k",
            "3",
            "--llama-spec",
            str(fake),
            "--json",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    refs = json.loads(captured.out)["prompts"][0]["llama_cpp"]
    assert refs["ngram"]["tokens"] == [16, 16] and "same_stretch" in refs["ngram"]
    assert "ours_acceptance_rate" in refs["ngram"] and "auto_vs_llama_cpp" in refs["ngram"]
    # One token past ours is the same stretch: compared with the suite's own runs, nothing run again.
    assert refs["ngram-mod"]["tokens"] == [9, 9] and "same_stretch" not in refs["ngram-mod"]


FAKE_FAILING_LLAMA = """#!/usr/bin/env python3
import os, sys
count = sys.argv[0] + ".count"
n = int(open(count).read()) if os.path.exists(count) else 0
open(count, "w").write(str(n + 1))
if n:
    sys.exit("out of memory")
print("decoded 9 tokens in 0.5 seconds, speed: 18.0 t/s", file=sys.stderr)
print("n_drafted = 4", file=sys.stderr)
print("n_accept  = 2", file=sys.stderr)
"""


def test_a_reference_that_fails_keeps_what_was_measured_before_it_and_says_why(tiny_models, tmp_path, capsys):
    fake = tmp_path / "llama-speculative-simple"
    fake.write_text(FAKE_FAILING_LLAMA)
    fake.chmod(0o755)
    code = main(
        [
            "bench",
            "--target",
            str(tiny_models.target),
            "--ngram",
            "--modes",
            "ngram,auto",
            "--only",
            "code-edit",
            "--repeats",
            "1",
            "--max-tokens",
            "8",
            "--threads",
            "1",
            "--k",
            "3",
            "--llama-spec",
            str(fake),
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    assert "llama.cpp reference failed" in captured.err and "out of memory" in captured.err
    assert "llama.cpp ngram k=3" in captured.out and "llama.cpp ngram-mod" not in captured.out


def test_the_report_splits_thinking_and_answer_where_replies_think(capsys):
    from app.engine.events import FinishedEvent, GenerationStats, RoundEvent, TokenEvent

    plain, auto = ModeResult(tokens_per_second=[10.0]), ModeResult(tokens_per_second=[15.0])
    # One reply: a round of the draft model in the thinking, an n-gram round in the answer copying from it.
    events = [RoundEvent(0, "model", 4, 4, 3, index=0, time_s=0.2)]
    events += [
        TokenEvent(
            0, i, 50 + i, f"t{i}", "draft" if i < 3 else "target", "model" if i < 3 else None, 0, part="reasoning"
        )
        for i in range(4)
    ]
    events.append(RoundEvent(0, "ngram", 2, 2, 2, index=1, time_s=0.1))
    events += [TokenEvent(0, 4 + i, 51 + i, f"t{i}", "draft", "ngram", 1) for i in range(2)]
    events.append(FinishedEvent(0, "", GenerationStats()))
    for event in events:
        auto.thinking.feed(event)
    report = build_report({"p": {"plain": plain, "auto": auto}}, {}, [BenchPrompt("p", "thinking", "x")], 4)
    split = report["prompts"][0]["modes"]["auto"]["thinking"]
    assert split["reasoning"]["tokens"] == 4 and split["reasoning"]["by_drafter"]["model"]["acceptance_rate"] == 0.75
    assert split["answer"]["by_drafter"]["ngram"]["accepted"] == 2 and split["answer_copied_from_reasoning"] == 2
    print_report(report)
    assert "thinking | answer" in capsys.readouterr().out
