"""What a GGUF file holds, read from its header without touching the weights.

A small reader of our own walks the header, the key/value metadata and the tensor infos through a memory map.
Large arrays (a 150k-token vocabulary, its merges) are not decoded, so inspecting a 1 GB model costs tens of
milliseconds (mostly reading the token texts once, to find two alike) and a library of many models can be listed at
once. Tokenizer values follow llama.cpp's own defaults (src/llama-vocab.cpp) where a key is absent, so what we report
is what llama.cpp will use. app.engine.gguf_checks decides, from the same header, whether llama.cpp will load it.

Every problem with the file surfaces as ModelFileError with a message naming the file; nothing else escapes.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from app.engine import gguf_checks
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
    _UINT8: "<B", _INT8: "<b", _UINT16: "<H", _INT16: "<h", _UINT32: "<I", _INT32: "<i", _FLOAT32: "<f",
    _BOOL: "<?", _UINT64: "<Q", _INT64: "<q", _FLOAT64: "<d",
}
_SCALAR_SIZES = {t: struct.calcsize(f) for t, f in _SCALAR_FORMATS.items()}
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

# llama_ftype ids (include/llama.h) as the short labels people know from file names.
FILE_TYPE_LABELS = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
    37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0", 41: "Q2_0",
}
# When general.file_type is absent llama.cpp guesses from the most common tensor type (ggml_type id -> ftype id).
_GUESSED_FILE_TYPE = {
    0: 0, 1: 1, 30: 32, 2: 2, 3: 3, 6: 8, 7: 9, 8: 7, 10: 10, 11: 12, 12: 15, 13: 17, 14: 18, 34: 36, 35: 37,
    16: 19, 17: 20, 22: 28, 18: 23, 19: 24, 29: 31, 20: 25, 23: 30, 21: 26, 40: 39, 41: 40, 42: 41,
}

# tokenizer.ggml.model -> (llama.cpp vocab type, default bos id, default eos id); None is LLAMA_TOKEN_NULL.
_TOKENIZERS: dict[str, tuple[str, Optional[int], Optional[int]]] = {
    "no_vocab": ("NONE", None, None),
    "none": ("NONE", None, None),
    "llama": ("SPM", 1, 2),
    "bert": ("WPM", 101, None),
    "gpt2": ("BPE", 11, 11),
    "hybriddna": ("BPE", 11, 11),
    "whitespace": ("BPE", 11, 11),
    "t5": ("UGM", None, 1),
    "rwkv": ("RWKV", None, None),
    "test": ("TEST", None, None),
    "plamo2": ("PLAMO2", 1, 2),
    "gemma4": ("BPE", None, None),
}
# BPE pre-tokenizers for which llama.cpp turns add_bos on before reading the file's own flag.
_PRE_ADDS_BOS = {
    "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano",
    "tekken", "chameleon",
}
# BPE pre-tokenizers for which llama.cpp has no BOS by default.
_PRE_NO_BOS = {"chatglm-bpe", "glm4", "glm5"}
_SPLIT_NAME = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$")


@dataclass(frozen=True)
class ArrayInfo:
    """A metadata array too long to decode for inspection: its item type (GGUF type id) and length."""

    item_type: int
    count: int


@dataclass(frozen=True)
class ModelInfo:
    """What inspect_gguf learned about one file. Ids are None where llama.cpp has none (LLAMA_TOKEN_NULL)."""

    path: Path
    file_size: int
    name: str
    architecture: str
    parameter_count: int
    file_type: Optional[int]  # llama_ftype id; guessed from the tensors when the file does not say
    quantization: str  # "Q4_K_M", "F16", ...; "unknown" for ids this table does not know
    file_type_guessed: bool
    context_length: Optional[int]
    tokenizer_model: str  # tokenizer.ggml.model as written ("gpt2", "llama", ...)
    tokenizer_pre: Optional[str]
    vocab_type: str  # llama.cpp's name: "BPE", "SPM", "WPM", "UGM", "RWKV", "PLAMO2", "TEST", "NONE"
    vocab_size: int
    bos_id: Optional[int]
    eos_id: Optional[int]
    eot_id: Optional[int]  # only when the file names it (llama.cpp may also find one by its text)
    eom_id: Optional[int]
    add_bos: bool
    add_eos: bool
    chat_template: Optional[str]
    split_count: int  # 1 for an ordinary file
    split_index: int  # 0-based: 0 is the first part, the one to open
    usable: bool
    problem: str  # why not usable, in words; "" when usable
    tensor_count: int
    # Digest of token texts from id TOKEN_CHECK_START on, as stored: equal digests mean equal texts.
    tokens_digest: str = field(repr=False, default="")
    metadata: dict[str, object] = field(repr=False, default_factory=dict, compare=False)

    @property
    def size_label(self) -> str:
        return format_parameter_count(self.parameter_count)


def format_parameter_count(count: int) -> str:
    """1543714304 -> "1.54B", 135000000 -> "135M"."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if count >= scale:
            value = count / scale
            return f"{value:.3g}{suffix}" if value < 100 else f"{value:.0f}{suffix}"
    return str(count)


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
class _Header:
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
        return bytes(self.buf[start: self.pos])

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

    def value(self, value_type: int, key: str, header: _Header) -> object:
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


def _open_map(path: Path) -> tuple[mmap.mmap, int]:
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


def _read_header(path: Path, buf, file_size: int) -> _Header:
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
        header = _Header(version=version, metadata={}, tokens=None, tensors=[], data_start=0)
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


def _tensor_data_end(header: _Header) -> Optional[int]:
    """Where the last tensor's bytes end; None when a tensor type is unknown to the gguf package."""
    end = 0
    for _name, dims, ggml_type, offset in header.tensors:
        nbytes = _tensor_bytes(dims, ggml_type)
        if nbytes is None:
            return None
        end = max(end, header.data_start + offset + nbytes)
    return end


def _tensor_bytes(dims: tuple[int, ...], ggml_type: int) -> Optional[int]:
    """Bytes of one tensor's data; None for a type the gguf package does not know."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
    except (ValueError, KeyError):
        return None
    return _elements(dims) // block_size * type_size


def read_tensor_sizes(path: Union[str, Path]) -> list[tuple[str, int]]:
    """(name, bytes) of every tensor, the other parts of a split model included; a type unknown to the gguf
    package counts as 0 bytes. Raises ModelFileError for an unreadable file."""
    parts = [Path(path)]
    sizes: list[tuple[str, int]] = []
    while parts:
        part = parts.pop(0)
        buf, file_size = _open_map(part)
        try:
            header = _read_header(part, buf, file_size)
        finally:
            buf.close()
        sizes += [(name, _tensor_bytes(dims, t) or 0) for name, dims, t, _o in header.tensors]
        count = _int_or_none(header.metadata.get("split.count")) or 1
        if part == Path(path) and count > 1:
            parts += _split_problem(part, _int_or_none(header.metadata.get("split.no")) or 0, count)[1]
    return sizes


def _int_or_none(value: object) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _special_id(metadata: dict[str, object], key: str, default: Optional[int], vocab_size: int) -> Optional[int]:
    """A special token id as llama.cpp resolves it: an out-of-range default is dropped, an out-of-range key ignored."""
    if default is not None and default >= vocab_size:
        default = None
    value = _int_or_none(metadata.get(key))
    if value is None or value < 0 or value >= vocab_size:
        return default
    return value


def _as_bool(value: object, default: bool) -> bool:
    return bool(value) if isinstance(value, (bool, int)) else default


def _split_problem(path: Path, index: int, count: int) -> tuple[str, list[Path]]:
    """("", sibling paths) when every part of a split model is where llama.cpp will look, else what is wrong."""
    if index != 0:
        first = _SPLIT_NAME.match(path.name)
        hint = f" ({first['prefix']}-00001-of-{count:05d}.gguf)" if first else ""
        return f"part {index + 1} of {count} of a split model: open the first part{hint}", []
    match = _SPLIT_NAME.match(path.name)
    if not match:
        return "", []
    siblings = [path.with_name(f"{match['prefix']}-{i:05d}-of-{count:05d}.gguf") for i in range(2, count + 1)]
    missing = [p.name for p in siblings if not p.is_file()]
    if missing:
        return f"split model: {len(missing)} of its {count} parts missing ({', '.join(missing[:3])})", []
    return "", siblings


def _vocab_defaults(metadata: dict[str, object]) -> tuple[str, Optional[str], Optional[int], Optional[int], bool, bool, str]:
    """(vocab type, pre-tokenizer, default bos, default eos, add_bos, add_eos, problem) per llama.cpp's vocab load."""
    model = metadata.get("tokenizer.ggml.model")
    pre = metadata.get("tokenizer.ggml.pre")
    pre = pre if isinstance(pre, str) else None
    if not isinstance(model, str):
        return "NONE", pre, None, None, False, False, "no tokenizer (tokenizer.ggml.model is missing)"
    known = _TOKENIZERS.get(model)
    if known is None:
        return "NONE", pre, None, None, False, False, f"unknown tokenizer '{model}'"
    vocab_type, bos, eos = known
    add_bos = add_eos = False
    if model == "gemma4":
        pre = "gemma4"
    if vocab_type == "BPE":
        if pre in _PRE_ADDS_BOS:
            add_bos = True
        if pre in _PRE_NO_BOS:
            bos = None
    elif vocab_type in ("SPM", "WPM"):
        add_bos = True
    elif vocab_type == "UGM":
        add_eos = True
    return vocab_type, pre, bos, eos, add_bos, add_eos, ""


def inspect_gguf(path: Union[str, Path]) -> ModelInfo:
    """Read a model's metadata and tensor infos (never its weights). Raises ModelFileError for an unreadable file."""
    path = Path(path)
    buf, file_size = _open_map(path)
    try:
        header = _read_header(path, buf, file_size)
        data_end = _tensor_data_end(header)
        if data_end is not None and data_end > file_size:
            raise ModelFileError(
                f"{path}: truncated: tensor data ends past the end of the file "
                f"(needs {data_end} bytes, the file has {file_size})"
            )
        tokens_digest = ""
        problems: list[str] = []
        if header.tokens is not None:
            tokens_digest = hashlib.blake2b(buf[header.tokens.check_start: header.tokens.end], digest_size=16).hexdigest()
            twins = gguf_checks.duplicate_token(buf, header.tokens.start, header.tokens.count)
            if twins is not None:
                problems.append(f"tokens {twins[0]} and {twins[1]} have the same text "
                                f"{twins[2].decode('utf-8', errors='replace')!r}")
    finally:
        buf.close()
    return _model_info(path, file_size, header, tokens_digest, problems)


def _model_info(path: Path, file_size: int, header: _Header, tokens_digest: str, problems: list[str]) -> ModelInfo:
    meta = header.metadata
    problems = list(problems)
    architecture = meta.get("general.architecture")
    if not isinstance(architecture, str):
        problems.insert(0, "no general.architecture: not a llama.cpp model")
        architecture = ""
    elif gguf_checks.architecture_problem(architecture):
        problems.insert(0, gguf_checks.architecture_problem(architecture))

    vocab_type, pre, bos_default, eos_default, add_bos, add_eos, vocab_problem = _vocab_defaults(meta)
    if vocab_problem:
        problems.append(vocab_problem)
    if vocab_type == "NONE":
        vocab_size = _int_or_none(meta.get(f"{architecture}.vocab_size")) or 0
    elif header.tokens is None:
        vocab_size = 0
        problems.append("no token list (tokenizer.ggml.tokens is missing)")
    else:
        vocab_size = header.tokens.count
    if vocab_type == "NONE":
        bos_id = eos_id = eot_id = eom_id = None
    else:
        bos_id = _special_id(meta, "tokenizer.ggml.bos_token_id", bos_default, vocab_size)
        eos_id = _special_id(meta, "tokenizer.ggml.eos_token_id", eos_default, vocab_size)
        eot_id = _special_id(meta, "tokenizer.ggml.eot_token_id", None, vocab_size)
        eom_id = _special_id(meta, "tokenizer.ggml.eom_token_id", None, vocab_size)
        add_bos = _as_bool(meta.get("tokenizer.ggml.add_bos_token"), add_bos)
        add_eos = _as_bool(meta.get("tokenizer.ggml.add_eos_token"), add_eos)
        if pre == "gemma4":
            add_bos = True  # llama.cpp forces it for Gemma 4
        sep_id = _special_id(meta, "tokenizer.ggml.seperator_token_id", 102 if vocab_type == "WPM" else None,
                             vocab_size)
        problems.extend(gguf_checks.special_token_problems(vocab_type, add_bos, bos_id, add_eos, eos_id, sep_id))
        pre_problem = gguf_checks.pre_tokenizer_problem(vocab_type, pre)
        if pre_problem:
            problems.append(pre_problem)

    file_type = _int_or_none(meta.get("general.file_type"))
    guessed = file_type is None
    if guessed:
        file_type = _guess_file_type(header)

    split_count = _int_or_none(meta.get("split.count")) or 1
    split_index = _int_or_none(meta.get("split.no")) or 0
    problems.extend(gguf_checks.tensor_problems(header.tensors, header.alignment))
    if split_count == 1:
        n_layer = _int_or_none(meta.get(f"{architecture}.block_count"))
        names = [name for name, _d, _t, _o in header.tensors]
        problems.extend(gguf_checks.missing_tensor_problems(architecture, names, n_layer))
    parameter_count = sum(_elements(dims) for _n, dims, _t, _o in header.tensors)
    if split_count > 1:
        split_problem, siblings = _split_problem(path, split_index, split_count)
        if split_problem:
            problems.insert(0, split_problem)
        try:
            parameter_count += _sibling_parameters(siblings)
        except ModelFileError as exc:
            problems.insert(0, f"split model: another part is unreadable ({exc})")

    name = meta.get("general.name")
    context_length = _int_or_none(meta.get(f"{architecture}.context_length"))
    chat_template = meta.get("tokenizer.chat_template")
    return ModelInfo(
        path=path,
        file_size=file_size,
        name=name if isinstance(name, str) and name.strip() else path.stem,
        architecture=architecture,
        parameter_count=parameter_count,
        file_type=file_type,
        quantization=FILE_TYPE_LABELS.get(file_type, "unknown") if file_type is not None else "unknown",
        file_type_guessed=guessed,
        context_length=context_length,
        tokenizer_model=str(meta.get("tokenizer.ggml.model", "")),
        tokenizer_pre=pre,
        vocab_type=vocab_type,
        vocab_size=vocab_size,
        bos_id=bos_id,
        eos_id=eos_id,
        eot_id=eot_id,
        eom_id=eom_id,
        add_bos=add_bos,
        add_eos=add_eos,
        chat_template=chat_template if isinstance(chat_template, str) else None,
        split_count=split_count,
        split_index=split_index,
        usable=not problems,
        problem="; ".join(problems),
        tensor_count=len(header.tensors),
        tokens_digest=tokens_digest,
        metadata=meta,
    )


def _elements(dims: tuple[int, ...]) -> int:
    count = 1
    for dim in dims:
        count *= dim
    return count


def _guess_file_type(header: _Header) -> Optional[int]:
    counts: dict[int, int] = {}
    for _name, _dims, ggml_type, _offset in header.tensors:
        counts[ggml_type] = counts.get(ggml_type, 0) + 1
    if not counts:
        return None
    most_common = max(counts, key=lambda t: counts[t])
    return _GUESSED_FILE_TYPE.get(most_common, 0)


def _sibling_parameters(siblings: list[Path]) -> int:
    """Parameters held by the other parts of a split model (their headers only)."""
    total = 0
    for sibling in siblings:
        buf, size = _open_map(sibling)
        try:
            header = _read_header(sibling, buf, size)
        finally:
            buf.close()
        total += sum(_elements(dims) for _n, dims, _t, _o in header.tensors)
    return total


def read_token_texts(path: Union[str, Path], start: int = 0, stop: Optional[int] = None) -> list[bytes]:
    """Token texts [start, stop) exactly as stored (bytes). An empty text reads as llama.cpp shows it, "[EMPTY_i]"."""
    path = Path(path)
    buf, file_size = _open_map(path)
    try:
        header = _read_header(path, buf, file_size)
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
