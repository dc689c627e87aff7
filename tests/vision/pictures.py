"""Pictures for the image tests, drawn with Pillow (a test dependency) so each is a real file of its format, and an
HTTP server that hands them out (for servers that fetch pictures named by URL)."""

from __future__ import annotations

import io
import struct
import threading
import zlib
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Optional

import numpy as np

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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


def png_chunk(name: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + name + body + struct.pack(">I", zlib.crc32(name + body))


def flat_png(width: int, height: int) -> bytes:
    """A valid PNG of one colour, small however large its size: its rows compress to almost nothing."""
    rows = zlib.compressobj(9)
    row = bytes(1 + 3 * width)
    stream = b"".join(rows.compress(row) for _ in range(height)) + rows.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return PNG_SIGNATURE + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", stream) + png_chunk(b"IEND", b"")


def hostile_pictures() -> dict[str, bytes]:
    """Valid pictures, each damaged as a hostile sender would: a PNG whose stream inflates to 16 MiB for 64 x 64
    pixels, a BMP whose header claims 4000 x 3000 pixels it does not hold, a JPEG and a GIF cut short, a GIF of
    200,000 tiny blocks (seconds to walk)."""
    from PIL import Image

    noise = np.random.default_rng(54).integers(0, 256, (64, 64, 3), dtype=np.uint8)

    def saved(fmt: str, size: tuple[int, int]) -> bytes:
        out = io.BytesIO()
        Image.fromarray(noise[: size[1], : size[0]]).save(out, fmt)
        return out.getvalue()

    png = saved("PNG", (64, 64))
    idat = png.index(b"IDAT") - 4
    bomb = zlib.compressobj(9)
    stream = b"".join(bomb.compress(bytes(1 << 20)) for _ in range(16)) + bomb.flush()
    gif = saved("GIF", (8, 8))
    blocks = 13 + (3 * 2 ** ((gif[10] & 7) + 1) if gif[10] & 0x80 else 0)  # after the global colour table
    comment = b"\x21\xfe" + b"\x01." * 200_000 + b"\x00"  # a comment of 200,000 one-byte pieces
    bmp = bytearray(saved("BMP", (2, 2)))
    bmp[18:26] = struct.pack("<ii", 4000, 3000)
    return {
        "bomb.png": png[:idat] + png_chunk(b"IDAT", stream) + png_chunk(b"IEND", b""),
        "claims.bmp": bytes(bmp),
        "cut.jpg": saved("JPEG", (64, 64))[:300],
        "cut.gif": gif[:10],
        "blocks.gif": gif[:blocks] + comment + gif[blocks:],
    }
