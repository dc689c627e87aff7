"""Many requests at once on the real Qwen pair: one engine decoding every request in one batch
(app.engine.local.batch), for 1, 2 and 4 requests and each speculation mode (app.bench.concurrent says what it
prints).

    python -m tests.perf.concurrency [--tokens 64] [--n 1,2,4] [--f16 PATH] [--only-f16] [--threads 2] [--modes ...]

Targets: the Q4_K_M 1.5B, and with --f16 its F16 copy (made by /work/shared/tools/make-f16-target.py), each with
the 0.5B draft. Modes: plain; n-gram lookup, a fixed 8; the draft model, a fixed 4; Auto (the controller with the
draft model and n-gram lookup, drafts decided for the batch). Through HTTP against llama-server -np N:
tests/perf/concurrency_servers.py. CPU-heavy: run it alone.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from app.bench.concurrent import MODES, bench
from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--n", default="1,2,4", help="request counts, comma-separated")
    parser.add_argument("--f16", type=Path, help="the target's F16 copy, benchmarked after the Q4 one")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only-f16", action="store_true", help="skip the Q4 target")
    parser.add_argument("--modes", default=",".join(MODES), help=f"some of {', '.join(MODES)}, plain first")
    args = parser.parse_args()
    ns = [int(x) for x in args.n.split(",")]
    modes = tuple(m for m in args.modes.split(",") if m in MODES)
    draft = REAL_MODELS_DIR / REAL_DRAFT
    if not args.only_f16:
        bench(REAL_MODELS_DIR / REAL_TARGET, draft, ns, args.tokens, args.threads, modes)
    if args.f16 is not None:
        bench(args.f16, draft, ns, args.tokens, args.threads, modes)


if __name__ == "__main__":
    main()
