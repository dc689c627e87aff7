"""The first reply after choosing a model, on a cold cost cache, through the window's own engine process.

    python -m tests.perf.first_reply [--repeats 3] [--tokens 128] [--threads 2]

For each repetition and each mode (Auto, then plain, the order alternating), a fresh engine process with an empty
cache directory loads the real Qwen pair, and the first message is sent the moment the models are loaded (the user
typed it while they loaded), or `--delay` seconds later (while the idle-time measurement runs). Prints the
timeline (choose -> loaded -> first token), the first token's time against the load time plus the prompt's own
evaluation, and Auto's tok/s against plain's in the same repetition. CPU-heavy: run it alone.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import statistics
import sys
import tempfile
import time

from PySide6.QtCore import QCoreApplication, QEventLoop, QTimer

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import TokenEvent
from app.engine.targets import LocalModel
from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET

PROMPTS = {
    "question": "Write a Python function that checks whether a string is a palindrome, with a docstring.",
    "code edit": (
        "Rename the function `area` to `rectangle_area` and change nothing else:\n\n```python\n"
        'def area(width, height):\n    """The area of a rectangle."""\n    if width < 0 or height < 0:\n'
        '        raise ValueError("negative size")\n    return width * height\n\n\n'
        'def describe(width, height):\n    return f"{width} x {height} = {area(width, height)}"\n```'
    ),
}


def first_reply(target, draft, prompt: str, speculative: bool, tokens: int, threads: int, delay: float) -> dict:
    """One cold start: a new engine process and cache directory, load, then the first reply."""
    from app.ui.engine_link.engine_process import EngineProcess

    os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp(prefix="specchat-first-reply-")
    engine = EngineProcess()
    times: dict[str, float] = {}
    result: dict = {}
    loop = QEventLoop()

    def loaded(*_args):
        times["loaded"] = time.perf_counter()
        QTimer.singleShot(int(delay * 1000), send)

    def send():
        times["sent"] = time.perf_counter()
        config = GenerationConfig(max_tokens=tokens, temperature=0.0, speculative=speculative)
        engine.request_generate(2, [{"role": "user", "content": prompt}], config)

    def stream(events):
        if "first" not in times and any(isinstance(e, TokenEvent) for e in events):
            times["first"] = time.perf_counter()

    def finished(event):
        result["stats"] = event.stats
        loop.quit()

    engine.sig_models_loaded.connect(loaded)
    engine.sig_stream.connect(stream)
    engine.sig_finished.connect(finished)
    engine.sig_load_failed.connect(lambda failed: (print(failed.message, file=sys.stderr), loop.quit()))
    engine._ensure_started()  # the window's engine process is running before a model is chosen
    time.sleep(3.0)
    times["chose"] = time.perf_counter()
    engine.request_load(
        1, LocalModel(Path(target)), Path(draft) if draft else None, LoadSettings(n_ctx=4096, n_threads=threads)
    )
    loop.exec()
    engine.stop()
    stats = result["stats"]
    load_s = times["loaded"] - times["chose"]
    return {
        "load_s": load_s,
        "first_token_s": times["first"] - times["chose"],
        "wait_after_send_s": times["first"] - times["sent"],
        "prompt_eval_s": stats.prompt_eval_s,
        "tokens_per_second": stats.tokens_per_second,
        "tokens": stats.tokens,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between loaded and sending")
    parser.add_argument("--only", choices=sorted(PROMPTS), help="run one of the prompts only")
    args = parser.parse_args()
    target, draft = REAL_MODELS_DIR / REAL_TARGET, REAL_MODELS_DIR / REAL_DRAFT
    if not target.is_file() or not draft.is_file():
        print("needs the real Qwen pair (../shared/models/fetch-models.sh)", file=sys.stderr)
        return 2
    QCoreApplication.instance() or QCoreApplication(sys.argv)
    for name, prompt in PROMPTS.items():
        if args.only and name != args.only:
            continue
        ratios, budgets = [], []
        for rep in range(args.repeats):
            order = (True, False) if rep % 2 == 0 else (False, True)
            runs = {}
            for speculative in order:
                run = first_reply(target, draft, prompt, speculative, args.tokens, args.threads, args.delay)
                runs[speculative] = run
                mode = "auto " if speculative else "plain"
                budget = run["first_token_s"] / (run["load_s"] + args.delay + run["prompt_eval_s"])
                budgets.append(budget)
                print(
                    f"{name:<9} rep {rep + 1} {mode}: chose -> loaded {run['load_s']:.2f} s -> sent "
                    f"+{args.delay:.1f} s -> first token {run['first_token_s']:.2f} s (prompt evaluation "
                    f"{run['prompt_eval_s']:.2f} s; first token / (load + delay + prompt) = {budget:.3f}); "
                    f"{run['tokens']} tokens at {run['tokens_per_second']:.1f} tok/s",
                    flush=True,
                )
            ratios.append(runs[True]["tokens_per_second"] / runs[False]["tokens_per_second"])
        print(
            f"{name}: Auto's first reply / plain's, paired per repetition: "
            f"{', '.join(f'{r:.3f}' for r in ratios)} (median {statistics.median(ratios):.3f}); "
            f"first token / (load + delay + prompt evaluation): median {statistics.median(budgets):.3f}, "
            f"worst {max(budgets):.3f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
