"""Pictures for the image tests, drawn with Pillow (a test dependency) so each is a real file of its format, and an
HTTP server that hands them out (for servers that fetch pictures named by URL)."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Optional

import numpy as np


def write_pictures(dest: Path) -> list[Path]:
    from PIL import Image

    rng = np.random.default_rng(46)
    noise = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    stripes = np.zeros((64, 64, 3), dtype=np.uint8)
    stripes[::8] = (255, 0, 0)
    stripes[:, ::5, 2] = 200
    ramp = np.linspace(0, 255, 96, dtype=np.uint8)
    gradient = np.stack([np.tile(ramp, (48, 1)), np.tile(ramp[::-1], (48, 1)), np.full((48, 96), 90, np.uint8)], -1)
    paths = [dest / "noise.png", dest / "stripes.png", dest / "gradient.jpg"]
    for array, path in zip((noise, stripes, gradient), paths):
        Image.fromarray(array).save(path)
    return paths


@contextmanager
def picture_server(files: dict[str, bytes], redirects: Optional[dict[str, str]] = None):
    """An HTTP server on 127.0.0.1 answering GET /NAME with files[NAME], or a redirect to redirects[NAME] (read at
    each request), 404 otherwise; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            name = self.path.lstrip("/")
            if redirects and name in redirects:
                self.send_response(302)
                self.send_header("Location", redirects[name])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = files.get(name)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
