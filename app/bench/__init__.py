"""Benchmarks: the prompt suite and its modes (suite.py) and the arguments every benchmark front end shares
(args.py). The front ends are `python -m app bench` (app/cli/bench_cmd.py) and the GUI overhead benchmark
(app/ui/devtools/bench_gui.py); neither the engine nor the window depends on this package.

- under_load.py: `specchat-cli bench --under-load`: plain decoding while a busy program from another session holds a core, against a quiet machine and llama-completion.
- native.py: `specchat-cli bench --plain-vs-native`: our plain decoding against llama.cpp's own `llama-completion`, sampling
- gpu_check.py: `python -m app.bench.gpu_check`: the GPU path measured in one run (CUDA build, synthetic models of real shapes, plain and speculation against llama.cpp, Auto GPU layers); `--dry-run` on a CPU for CI.
- concurrent.py: `python -m app.bench.concurrent`: many requests at once through the batch, per mode and N (the GPU check's and tests/perf/concurrency.py's).
- report.py: One run's results as the report `specchat-cli bench` prints: ratios per prompt and mode, as JSON or a table.
- agents.py: `specchat-cli bench --agents`: a recorded Claude Code session through `serve` and llama-server, per request cached share, first token and total.
- agent_replay.py: a recorded agent session read from its files and replayed, streamed and timed, against an Anthropic Messages server.
- references.py: llama.cpp's llama-speculative-simple as the bench's native reference, compared over the same stretch of reply.
"""
