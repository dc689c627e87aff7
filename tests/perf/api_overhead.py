"""What the local API costs: the same greedy request answered by the engine directly and through the API, side by side.

    python -m tests.perf.api_overhead [--repeats 3] [--tokens 128] [--threads 2] [--tiny]

One process loads the real Qwen pair once (with --tiny, the synthetic models, whose hundreds of tokens per second
make the API's cost per token stand out). For each repetition and prompt, in alternating order, the engine answers
the request directly (as `generate --chat` does) and through the API (a client thread streams it over loopback
while this thread answers the queued job, as `specchat-cli serve` does). Prints each run's tok/s (the engine's own,
and the client's from its first chunk to its last), their ratio, and whether the two texts are the same (they must
be: greedy). CPU-heavy: run it alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent
from app.serve.jobs import run_job, served_models
from app.serve.requests import ApiOptions
from app.serve.server import ApiServer
from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET
from tests.perf.first_reply import PROMPTS
from tests.serve.api_fixtures import chat_body, client


def _direct(engine, prompt: str, config: GenerationConfig) -> tuple[str, float]:
    finished = None
    for event in engine.chat([{"role": "user", "content": prompt}], config):
        if isinstance(event, FinishedEvent):
            finished = event
    return finished.text, finished.stats.tokens_per_second, finished.stats


def _through_api(engine, server: ApiServer, prompt: str, tokens: int) -> tuple[str, float, float]:
    seen: dict = {}

    def ask() -> None:
        pieces, stamps = [], []
        with client() as http:
            body = {**chat_body(prompt, tokens), "stream": True}
            with http.stream("POST", f"{server.url}/v1/chat/completions", json=body) as response:
                for line in response.iter_lines():
                    if line.startswith("data: {"):
                        chunk = json.loads(line[6:])
                        if chunk.get("specchat", {}).get("tokens"):
                            pieces.append(chunk["choices"][0]["delta"]["content"])
                            stamps.append(time.perf_counter())
        seen.update(text="".join(pieces), client_tps=(len(stamps) - 1) / max(stamps[-1] - stamps[0], 1e-9))

    asker = threading.Thread(target=ask)
    asker.start()
    job = server.queue.take(60)
    finished = run_job(engine, job)
    asker.join(60)
    return seen["text"], finished.stats.tokens_per_second, seen["client_tps"], finished.stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tiny", action="store_true", help="the synthetic models instead of the real pair")
    args = parser.parse_args()
    from app.engine.local.engine import SpecEngine

    target, draft = REAL_MODELS_DIR / REAL_TARGET, REAL_MODELS_DIR / REAL_DRAFT
    if args.tiny:
        from app.testing.synthetic import make_model_set

        models = make_model_set(Path(tempfile.mkdtemp(prefix="specchat-api-overhead-")))
        target, draft = models.target, models.draft
    engine = SpecEngine(LoadSettings(n_ctx=4096, n_threads=args.threads))
    engine.load_target(target)
    engine.load_draft(draft)
    config = GenerationConfig(max_tokens=args.tokens, session="api")
    server = ApiServer(ApiOptions(port=0, defaults=config))
    server.publish(served_models(engine))
    server.start()
    ratios: dict[str, list[float]] = {name: [] for name in PROMPTS}
    try:
        for repeat in range(args.repeats):
            for name, prompt in PROMPTS.items():
                order = ("direct", "api") if repeat % 2 == 0 else ("api", "direct")
                result = {}
                for mode in order:
                    if mode == "direct":
                        result["direct"] = _direct(engine, prompt, config)
                    else:
                        result["api"] = _through_api(engine, server, prompt, args.tokens)
                (direct_text, direct_tps, direct_stats), (api_text, api_tps, client_tps, api_stats) = (
                    result["direct"],
                    result["api"],
                )
                ratios[name].append(api_tps / direct_tps)
                print(
                    f"{repeat + 1} {name:9s} direct {direct_tps:6.1f} tok/s | API engine {api_tps:6.1f} tok/s, "
                    f"client {client_tps:6.1f} tok/s | API/direct {api_tps / direct_tps:.2f} | "
                    f"same text: {api_text == direct_text} | kept/drafted direct "
                    f"{direct_stats.accepted}/{direct_stats.drafted}, API {api_stats.accepted}/{api_stats.drafted}",
                    flush=True,
                )
    finally:
        server.stop()
        engine.close()
    for name, values in ratios.items():
        print(f"{name}: API/direct tok/s median {statistics.median(values):.2f} over {len(values)} runs")


if __name__ == "__main__":
    main()
