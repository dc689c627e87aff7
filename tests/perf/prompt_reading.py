"""Prompt reading (real model): the engine's own path (LoadedModel.decode, at the batch Auto picks) over N tokens,
to compare with `llama-bench -p N -n 0 -b 512 -ub 512 -t THREADS` run beside it.

    python -m tests.perf.prompt_reading [--tokens 4000] [--threads 2] [--model MODEL.gguf]

The prompt is this repository's own engine source, cut to N tokens; a 16-token read first warms the model up. One
run; interleave it with llama-bench's (`--no-warmup -r 1`) in both orders, and note the load (docs/performance.md).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from app.engine.local.llama_model import LoadedModel
from tests.conftest import REAL_MODELS_DIR, REAL_TARGET

SOURCE = Path(__file__).resolve().parents[2] / "app" / "engine"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--model", type=Path, default=REAL_MODELS_DIR / REAL_TARGET)
    args = parser.parse_args(argv)
    model = LoadedModel(args.model, n_ctx=args.tokens + 64, n_threads=args.threads)
    text = "".join(path.read_text(encoding="utf-8") for path in sorted(SOURCE.rglob("*.py")))
    tokens = model.tokenize(text, add_special=False)[: args.tokens]
    if len(tokens) < args.tokens:
        print(f"only {len(tokens)} tokens of source to read")
    model.decode(tokens[:16])
    model.truncate(0)
    began = time.perf_counter()
    model.decode(tokens, logit_rows=[len(tokens) - 1])
    seconds = time.perf_counter() - began
    print(f"prompt of {len(tokens)} tokens: {seconds:.2f} s, {len(tokens) / seconds:.1f} tok/s")
    model.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
