"""The GGUF binary format: a small reader that walks the header, the key/value metadata and the tensor infos
through a memory map, without touching the weights.

Large arrays (a 150k-token vocabulary, its merges) are not decoded, only located, so the token texts can be read or
hashed later without a second walk. Every problem with the file surfaces as ModelFileError naming the file.
"""

from __future__ import annotations

import mmap
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from app.engine.errors import ModelFileError

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
# llama.cpp compares token texts from this id on (common/speculative.cpp); the digest covers the same range.
TOKEN_CHECK_START = 5
# Arrays up to this many items are decoded into `metadata`; longer ones are only counted.
SMALL_ARRAY = 64

# GGUF value types.
_UINT8, _INT8, _UINT16, _INT16, _UINT32, _INT32, _FLOAT32, _BOOL, _STRING, _ARRAY, _UINT64, _INT64, _FLOAT64 = range(13)
_SCALAR_FORMATS = {
    _UINT8: "<B",
    _INT8: "<b",
    _UINT16: "<H",
    _INT16: "<h",
    _UINT32: "<I",
    _INT32: "<i",
    _FLOAT32: "<f",
    _BOOL: "<?",
    _UINT64: "<Q",
    _INT64: "<q",
    _FLOAT64: "<d",
}
_SCALAR_SIZES = {t: struct.calcsize(f) for t, f in _SCALAR_FORMATS.items()}
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


@dataclass(frozen=True)
class ArrayInfo:
    """A metadata array too long to decode for inspection: its item type (GGUF type id) and length."""

    item_type: int
    count: int


class _Truncated(Exception):
    pass


class _Corrupt(Exception):
    pass


@dataclass
class _TokenArray:
    """Where the token list lies in the file, so texts can be read or hashed without a second walk."""

    count: int
    start: int  # offset of the first item
    check_start: int  # offset of item TOKEN_CHECK_START (or the end when shorter)
    end: int


@dataclass
class Header:
    version: int
    metadata: dict[str, object]
    tokens: Optional[_TokenArray]
    tensors: list[tuple[str, tuple[int, ...], int, int]]  # name, dims, ggml type, offset within the data section
    data_start: int
    alignment: int = DEFAULT_ALIGNMENT


class _Cursor:
    """Reads little-endian GGUF values from a buffer, raising _Truncated instead of reading past its end."""

    def __init__(self, buf, pos: int = 0):
        self.buf = buf
        self.pos = pos
        self.size = len(buf)

    def need(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _Truncated

    def u32(self) -> int:
        self.need(4)
        (value,) = _U32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return value

    def u64(self) -> int:
        self.need(8)
        (value,) = _U64.unpack_from(self.buf, self.pos)
        self.pos += 8
        return value

    def raw_string(self) -> bytes:
        length = self.u64()
        self.need(length)
        start = self.pos
        self.pos += length
        return bytes(self.buf[start : self.pos])

    def string(self) -> str:
        return self.raw_string().decode("utf-8", errors="replace")

    def skip_strings(self, count: int) -> None:
        # The hot loop when stepping over a vocabulary: plain locals, one bounds check per item.
        buf, pos, size, unpack = self.buf, self.pos, self.size, _U64.unpack_from
        for _ in range(count):
            if pos + 8 > size:
                raise _Truncated
            pos += 8 + unpack(buf, pos)[0]
        if pos > size:
            raise _Truncated
        self.pos = pos

    def scalar(self, value_type: int) -> object:
        fmt = _SCALAR_FORMATS.get(value_type)
        if fmt is None:
            raise _Corrupt(f"unknown value type {value_type}")
        size = _SCALAR_SIZES[value_type]
        self.need(size)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def value(self, value_type: int, key: str, header: Header) -> object:
        if value_type == _STRING:
            return self.string()
        if value_type != _ARRAY:
            return self.scalar(value_type)
        item_type = self.u32()
        count = self.u64()
        if item_type == _ARRAY:
            raise _Corrupt(f"nested array in {key}")
        if item_type == _STRING:
            if key == "tokenizer.ggml.tokens":
                start = self.pos
                self.skip_strings(min(count, TOKEN_CHECK_START))
                check_start = self.pos
                self.skip_strings(max(0, count - TOKEN_CHECK_START))
                header.tokens = _TokenArray(count, start, check_start, self.pos)
                return ArrayInfo(item_type, count)
            if count <= SMALL_ARRAY:
                return [self.string() for _ in range(count)]
            self.skip_strings(count)
            return ArrayInfo(item_type, count)
        size = _SCALAR_SIZES.get(item_type)
        if size is None:
            raise _Corrupt(f"unknown array item type {item_type} in {key}")
        if count <= SMALL_ARRAY:
            return [self.scalar(item_type) for _ in range(count)]
        self.need(count * size)
        self.pos += count * size
        return ArrayInfo(item_type, count)


def open_map(path: Path) -> tuple[mmap.mmap, int]:
    try:
        # O_NONBLOCK: opening a FIFO or a device named .gguf must not wait for a writer; only regular files count.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            kind = "is a folder" if stat.S_ISDIR(mode) else "is not a regular file"
            raise ModelFileError(f"{path}: {kind}, not a model file")
        with os.fdopen(fd, "rb") as handle:
            size = handle.seek(0, 2)
            if size == 0:
                raise ModelFileError(f"{path}: the file is empty")
            return mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ), size
    except FileNotFoundError:
        raise ModelFileError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ModelFileError(f"{path}: is a folder, not a model file") from None
    except PermissionError:
        raise ModelFileError(f"{path}: permission denied") from None
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"{path}: cannot read the file ({exc})") from None


def read_header(path: Path, buf, file_size: int) -> Header:
    cursor = _Cursor(buf)
    try:
        cursor.need(4)
        if bytes(buf[0:4]) != GGUF_MAGIC:
            raise ModelFileError(f"{path}: not a GGUF file (bad magic)")
        cursor.pos = 4
        version = cursor.u32()
        if version not in SUPPORTED_VERSIONS:
            if version & 0xFFFF == 0 and int.from_bytes(version.to_bytes(4, "little"), "big") in SUPPORTED_VERSIONS:
                raise ModelFileError(f"{path}: big-endian GGUF files are not supported")
            raise ModelFileError(f"{path}: unsupported GGUF version {version}")
        n_tensors = cursor.u64()
        n_kv = cursor.u64()
        header = Header(version=version, metadata={}, tokens=None, tensors=[], data_start=0)
        for _ in range(n_kv):
            key = cursor.string()
            value_type = cursor.u32()
            header.metadata[key] = cursor.value(value_type, key, header)
        for _ in range(n_tensors):
            name = cursor.string()
            n_dims = cursor.u32()
            if n_dims > 4:
                raise _Corrupt(f"tensor {name} has {n_dims} dimensions")
            dims = tuple(cursor.u64() for _ in range(n_dims))
            ggml_type = cursor.u32()
            offset = cursor.u64()
            header.tensors.append((name, dims, ggml_type, offset))
    except _Truncated:
        raise ModelFileError(f"{path}: truncated: metadata ends past the end of the file") from None
    except _Corrupt as exc:
        raise ModelFileError(f"{path}: corrupt metadata: {exc}") from None
    alignment = header.metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise ModelFileError(f"{path}: corrupt metadata: bad general.alignment {alignment!r}")
    header.alignment = alignment
    header.data_start = -(-cursor.pos // alignment) * alignment
    if header.data_start > file_size and header.tensors:
        raise ModelFileError(f"{path}: truncated: metadata ends past the end of the file")
    return header


def tensor_data_end(header: Header) -> Optional[int]:
    """Where the last tensor's bytes end; None when a tensor type is unknown to the gguf package."""
    end = 0
    for _name, dims, ggml_type, offset in header.tensors:
        nbytes = tensor_bytes(dims, ggml_type)
        if nbytes is None:
            return None
        end = max(end, header.data_start + offset + nbytes)
    return end


def tensor_bytes(dims: tuple[int, ...], ggml_type: int) -> Optional[int]:
    """Bytes of one tensor's data; None for a type the gguf package does not know."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
    except (ValueError, KeyError):
        return None
    return elements(dims) // block_size * type_size


def elements(dims: tuple[int, ...]) -> int:
    count = 1
    for dim in dims:
        count *= dim
    return count


def read_token_texts(path: Union[str, Path], start: int = 0, stop: Optional[int] = None) -> list[bytes]:
    """Token texts [start, stop) exactly as stored (bytes). An empty text reads as llama.cpp shows it, "[EMPTY_i]"."""
    path = Path(path)
    buf, file_size = open_map(path)
    try:
        header = read_header(path, buf, file_size)
        if header.tokens is None:
            return []
        count = header.tokens.count
        stop = count if stop is None else min(stop, count)
        cursor = _Cursor(buf, header.tokens.start)
        try:
            cursor.skip_strings(start)
            texts = []
            for i in range(start, stop):
                text = cursor.raw_string()
                texts.append(text or f"[EMPTY_{i}]".encode())
        except _Truncated:
            raise ModelFileError(f"{path}: truncated: metadata ends past the end of the file") from None
        return texts
    finally:
        buf.close()
