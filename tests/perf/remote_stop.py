"""Stop against a silent server, side by side in one run: how long from Stop to the end of the stream, for this
client (the stream's socket shut down by a watcher) and for the previous way (the response closed from another
thread, which does not wake a blocked read: the stream ends only at the read timeout). The server is the tests'
fake on 127.0.0.1, silent either before its response headers or mid-reply.

    python -m tests.perf.remote_stop [--repeats 3] [--read-timeout 5]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from app.engine.remote.http import _http, stream_chat
from tests.remote.fake_openai_server import FakeServer, Script, content_chunk

BODY = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "stream": True, "max_tokens": 16}
SILENT_S = 120.0


def _script(where: str) -> Script:
    if where == "before the headers":
        return Script(delay_before_s=SILENT_S)
    return Script(chunks=[content_chunk("The")], end="stall", stall_s=SILENT_S)


def _previous_way(url: str, cancel: threading.Event, read_timeout_s: float) -> None:
    """The stream as it was read before: httpx's iter_lines, the response closed from a watcher thread on Stop."""
    httpx = _http()
    try:
        with httpx.Client(timeout=httpx.Timeout(10.0, read=read_timeout_s), trust_env=False) as client:
            with client.stream("POST", f"{url}/v1/chat/completions", json=BODY) as response:

                def watch() -> None:
                    cancel.wait()
                    response.close()

                threading.Thread(target=watch, daemon=True).start()
                for _ in response.iter_lines():
                    if cancel.is_set():
                        return
    except httpx.HTTPError:
        return


def _this_client(url: str, cancel: threading.Event, read_timeout_s: float) -> None:
    for _ in stream_chat(url, BODY, None, cancel, read_timeout_s=read_timeout_s):
        pass


def _stop_latency(reader, where: str, read_timeout_s: float) -> float:
    """Seconds from Stop to the reader's return, with the server silent `where`."""
    with FakeServer(_script(where)) as server:
        cancel = threading.Event()
        thread = threading.Thread(target=reader, args=(server.url, cancel, read_timeout_s), daemon=True)
        thread.start()
        time.sleep(0.5)  # the request is out and the server has gone quiet
        stopped_at = time.monotonic()
        cancel.set()
        thread.join(read_timeout_s + 30.0)
        return time.monotonic() - stopped_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--read-timeout", type=float, default=5.0, help="the read timeout both readers use (the app's is 120 s)"
    )
    args = parser.parse_args()
    print(f"Stop on a silent server, median of {args.repeats} (read timeout {args.read_timeout:.0f} s)")
    print("| server silent | this client | previous way | ratio |")
    print("|---|---|---|---|")
    for where in ("before the headers", "mid-reply"):
        ours = statistics.median(_stop_latency(_this_client, where, args.read_timeout) for _ in range(args.repeats))
        before = statistics.median(_stop_latency(_previous_way, where, args.read_timeout) for _ in range(args.repeats))
        print(f"| {where} | {ours * 1000:.0f} ms | {before * 1000:.0f} ms | {before / max(ours, 1e-9):.0f}x |")


if __name__ == "__main__":
    main()
