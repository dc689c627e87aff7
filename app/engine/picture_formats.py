"""What a picture file's header declares (its size), and whether the data after it is the picture it declares.

llama.cpp's decoder (stb_image, inside mtmd) trusts a header: it allocates the declared size and reads what data there
is, filling the rest, so a 54-byte BMP whose header says 8000 x 5000 decodes as 40 million blank pixels. It inflates a
PNG's compressed stream whole, into a buffer it doubles as it needs, whatever the header declared, so a 1 MB PNG of
64 x 64 pixels can inflate to gigabytes. These checks read the file cheaply (a PNG's stream is inflated in bounded
pieces and counted, never held) so that what the decoder allocates and inflates is bounded by the declared size,
which the caller bounds in turn. Pure Python.
"""

from __future__ import annotations

import struct
import zlib
from typing import Optional

# Reading the stream of a PNG this many input bytes at a time, and at most INFLATE_PIECE output bytes a call, keeps
# what the count holds small whatever the picture's size.
_FEED = 1 << 16
_INFLATE_PIECE = 1 << 20
# Pixels that one byte of a JPEG's coded data can stand for at most: the densest baseline or progressive scan codes a
# block of 64 pixels in one bit; twice that margin is allowed. Fewer bytes cannot be the picture the header declares.
_JPEG_PIXELS_PER_BYTE = 1024
# The same for a GIF frame's LZW data: one 12-bit code stands for at most 4,096 pixels.
_GIF_PIXELS_PER_BYTE = 4096
# A PNG's colour type: its channels.
_PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
# Adam7 interlacing's seven passes: (first column, first row, column step, row step).
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))

# The chunks, segments or sub-blocks one file's walk reads at most. Encoders write few and large ones (a 20 MiB GIF of
# 255-byte sub-blocks has about 82,000); a file of millions of tiny ones would cost seconds of Python to walk.
MAX_BLOCKS = 100_000

CUT_SHORT = "cut short"


class _TooManyBlocks(Exception):
    pass


class _Blocks:
    """Counts the blocks one walk of a file reads; raises _TooManyBlocks past MAX_BLOCKS."""

    def __init__(self) -> None:
        self.read = 0

    def step(self) -> None:
        self.read += 1
        if self.read > MAX_BLOCKS:
            raise _TooManyBlocks


def picture_size(data: bytes, kind: str) -> Optional[tuple[int, int]]:
    """(width, height) from the header of a picture of `kind`; None when the header is cut short or damaged."""
    try:
        if kind == "PNG":
            if data[12:16] != b"IHDR":
                return None
            return struct.unpack(">II", data[16:24])
        if kind == "GIF":
            return struct.unpack("<HH", data[6:10]) if len(data) >= 13 else None
        if kind == "BMP":
            if struct.unpack("<I", data[14:18])[0] == 12:  # OS/2's header: 16-bit sizes
                return struct.unpack("<HH", data[18:22])
            width, height = struct.unpack("<ii", data[18:26])
            return abs(width), abs(height)
        return _jpeg_size(data)
    except struct.error:
        return None


def _jpeg_size(data: bytes) -> Optional[tuple[int, int]]:
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start of frame holds the size
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None


def data_problem(data: bytes, kind: str, width: int, height: int) -> Optional[str]:
    """Why the data after the header is not the `width` x `height` picture it declares, as a phrase ("cut short",
    CUT_SHORT, or what is wrong); None when it is."""
    try:
        if kind == "PNG":
            return _png_problem(data, width, height, _Blocks())
        if kind == "BMP":
            return _bmp_problem(data, width, height)
        if kind == "GIF":
            return _gif_problem(data, width, height, _Blocks())
        return _jpeg_problem(data, width, height, _Blocks())
    except (struct.error, IndexError):
        return CUT_SHORT
    except _TooManyBlocks:
        return f"is split into more than {MAX_BLOCKS:,} blocks, which no encoder writes"


def _png_raw_size(width: int, height: int, bits_per_pixel: int, interlaced: bool) -> int:
    """The bytes a PNG's stream inflates to: each row's bytes and its filter byte, pass by pass when interlaced."""
    if not interlaced:
        return height * (1 + (width * bits_per_pixel + 7) // 8)
    total = 0
    for x0, y0, dx, dy in _ADAM7:
        columns, rows = (width - x0 + dx - 1) // dx, (height - y0 + dy - 1) // dy
        if columns > 0 and rows > 0:
            total += rows * (1 + (columns * bits_per_pixel + 7) // 8)
    return total


def _png_problem(data: bytes, width: int, height: int, blocks: _Blocks) -> Optional[str]:
    depth, colour, interlace = data[24], data[25], data[28]
    channels = _PNG_CHANNELS.get(colour)
    if channels is None or depth not in (1, 2, 4, 8, 16):
        return f"has a colour type ({colour}) or bit depth ({depth}) that PNG does not define"
    need = _png_raw_size(width, height, channels * depth, interlace == 1)
    view = memoryview(data)
    inflater = zlib.decompressobj()
    inflated = 0
    pos = 8
    while pos + 12 <= len(data):
        blocks.step()
        length, name = struct.unpack(">I4s", data[pos : pos + 8])
        if pos + 12 + length > len(data):
            return CUT_SHORT
        if name == b"IEND":
            return None if inflater.eof and inflated == need else CUT_SHORT
        if name == b"IDAT":
            for start in range(pos + 8, pos + 8 + length, _FEED):
                piece: bytes | memoryview = view[start : min(start + _FEED, pos + 8 + length)]
                while piece and not inflater.eof:
                    try:
                        inflated += len(inflater.decompress(piece, min(_INFLATE_PIECE, need - inflated + 1)))
                    except zlib.error:
                        return "holds damaged compressed data"
                    if inflated > need:
                        return (
                            f"holds compressed data that inflates to more than its {width} x {height} pixels take "
                            "(a decompression bomb)"
                        )
                    piece = inflater.unconsumed_tail
        pos += 12 + length
    return CUT_SHORT


def _bmp_problem(data: bytes, width: int, height: int) -> Optional[str]:
    offset, header = struct.unpack("<II", data[10:18])
    if header == 12:
        bits, compression = struct.unpack("<H", data[24:26])[0], 0
    else:
        bits, compression = struct.unpack("<HI", data[28:34])
    if compression not in (0, 3, 6):  # plain rows, or rows with bit masks; the decoder reads no compressed BMP
        return "is a compressed BMP, which the decoder does not read; save it as PNG"
    if bits not in (1, 4, 8, 16, 24, 32):
        return f"has {bits} bits a pixel, which BMP does not define"
    row = (width * bits + 31) // 32 * 4
    return CUT_SHORT if offset + row * height > len(data) else None


def _gif_problem(data: bytes, width: int, height: int, blocks: _Blocks) -> Optional[str]:
    """The first frame must lie inside the screen and hold data enough for its pixels; the file must end."""
    i = _gif_blocks_start(data)
    while i < len(data):
        blocks.step()
        block = data[i]
        if block == 0x2C:
            x, y, w, h, packed = struct.unpack("<HHHHB", data[i + 1 : i + 10])
            if x + w > width or y + h > height:
                return "has a frame outside its picture"
            i += 10 + (3 * 2 ** ((packed & 7) + 1) if packed & 0x80 else 0) + 1
            coded, end = _gif_sub_blocks(data, i, blocks)
            if end > len(data):
                return CUT_SHORT
            return CUT_SHORT if coded * _GIF_PIXELS_PER_BYTE < w * h else None
        if block != 0x21:
            return CUT_SHORT if block == 0x3B else "has a block that GIF does not define"
        _, i = _gif_sub_blocks(data, i + 2, blocks)
    return CUT_SHORT


def gif_frames(data: bytes, enough: int = 2) -> int:
    """How many frames a GIF holds, counted up to `enough` (a damaged file, or one of too many blocks, counts what was
    read)."""
    i = _gif_blocks_start(data)
    frames = 0
    blocks = _Blocks()
    try:
        while i < len(data) and frames < enough:
            blocks.step()
            block = data[i]
            if block == 0x3B:  # the trailer
                break
            if block == 0x2C:  # an image: its descriptor, a local colour table, the LZW code size, then data
                frames += 1
                if i + 10 > len(data):
                    break
                packed = data[i + 9]
                i += 10 + (3 * 2 ** ((packed & 7) + 1) if packed & 0x80 else 0) + 1
            elif block == 0x21:  # an extension: its label, then data
                i += 2
            else:
                break
            i = _gif_sub_blocks(data, i, blocks)[1]
    except _TooManyBlocks:
        pass
    return frames


def _gif_blocks_start(data: bytes) -> int:
    """Where a GIF's blocks start: after the screen descriptor and its global colour table, if it has one."""
    return 13 + (3 * 2 ** ((data[10] & 7) + 1) if data[10] & 0x80 else 0)


def _gif_sub_blocks(data: bytes, i: int, blocks: _Blocks) -> tuple[int, int]:
    """(bytes of data, where the next block starts) for the sub-blocks at `i`, each led by its length, up to an empty
    one. The position is past the end of `data` when the file ends first."""
    coded = 0
    while i < len(data) and data[i]:
        blocks.step()
        coded += data[i]
        i += data[i] + 1
    return coded, i + 1


def _jpeg_problem(data: bytes, width: int, height: int, blocks: _Blocks) -> Optional[str]:
    """The coded data must end (an end-of-image marker after the first scan) and be enough for the pixels."""
    i = 2
    while i + 4 <= len(data):
        blocks.step()
        if data[i] != 0xFF:
            return "is damaged"
        marker = data[i + 1]
        if marker == 0xFF:  # fill bytes before a marker: to the last of them
            i = len(data) - len(data[i + 1 :].lstrip(b"\xff")) - 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if marker == 0xDA:  # the first scan: coded data follows; in it 0xFF is always followed by 0, or by a marker
            end = data.find(b"\xff\xd9", i + 2 + length)
            if end < 0:
                return CUT_SHORT
            return CUT_SHORT if (end - i) * _JPEG_PIXELS_PER_BYTE < width * height else None
        i += 2 + length
    return CUT_SHORT
