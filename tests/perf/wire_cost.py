"""What the typed wire costs against the positional tuples it replaced: pickling and unpickling a stream batch and
a load reply, as multiprocessing does for every message over the engine process's pipe. Prints ratios measured
side by side in one run (best of several repeats each, alternating, so a busy machine favours neither).

    PYTHONPATH=$PWD python tests/perf/wire_cost.py
"""

from __future__ import annotations

import pickle
import timeit
from pathlib import Path

from app.engine.events import RoundEvent, TokenEvent
from app.engine.host.wire import EngineEvents, ModelsLoaded
from app.engine.targets import LocalModel


def main() -> None:
    tokens = [TokenEvent(7, i, 1000 + i, f" tok{i}", "draft", "model", i // 4) for i in range(8)]
    rounds = [RoundEvent(7, "model", 4, 4, 3, "drafts pay off", i) for i in range(2)]
    cases = {
        "stream batch (8 tokens, 2 rounds)": (("stream", tokens + rounds), EngineEvents(tuple(tokens + rounds))),
        "models loaded": (
            ("loaded", 3, "/m/target.gguf", "/m/draft.gguf", 4096, "On the CPU"),
            ModelsLoaded(3, LocalModel(Path("/m/target.gguf")), Path("/m/draft.gguf"), 4096, "On the CPU"),
        ),
    }
    for name, (old, new) in cases.items():
        best = {"tuple": float("inf"), "record": float("inf")}
        for _ in range(7):
            for label, message in (("tuple", old), ("record", new)):
                seconds = timeit.timeit(
                    lambda m=message: pickle.loads(pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL)), number=5000
                )
                best[label] = min(best[label], seconds)
        size_old = len(pickle.dumps(old, protocol=pickle.HIGHEST_PROTOCOL))
        size_new = len(pickle.dumps(new, protocol=pickle.HIGHEST_PROTOCOL))
        print(
            f"{name}: record/tuple time {best['record'] / best['tuple']:.2f}x "
            f"({best['record'] / 5000 * 1e6:.1f} us vs {best['tuple'] / 5000 * 1e6:.1f} us per message), "
            f"size {size_new} vs {size_old} bytes"
        )


if __name__ == "__main__":
    main()
