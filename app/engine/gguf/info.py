"""What a GGUF file holds, read from its header without touching the weights.

The header is read by app.engine.gguf.reader; this module turns it into a ModelInfo. Inspecting a 1 GB model
costs tens of milliseconds (mostly reading the token texts once, to find two alike), so a library of many models
can be listed at once. Tokenizer values follow llama.cpp's own defaults (src/llama-vocab.cpp) where a key is absent, so what we report
is what llama.cpp will use. app.engine.gguf.checks decides, from the same header, whether llama.cpp will load it.

Every problem with the file surfaces as ModelFileError with a message naming the file; nothing else escapes.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from app.engine.gguf import checks as gguf_checks
from app.engine.gguf.kind import ModelKind, model_kind
from app.engine.errors import ModelFileError
from app.engine.gguf.reader import (
    TOKEN_CHECK_START,
    Header,
    elements,
    open_map,
    read_header,
    read_token_texts,
    tensor_bytes,
    tensor_data_end,
)
from app.common.units import format_parameter_count

__all__ = [
    "ModelInfo",
    "TOKEN_CHECK_START",
    "format_parameter_count",
    "inspect_gguf",
    "read_tensor_sizes",
    "read_token_texts",
]

# llama_ftype ids (include/llama.h) as the short labels people know from file names.
FILE_TYPE_LABELS = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
    39: "NVFP4",
    40: "Q1_0",
    41: "Q2_0",
}
# When general.file_type is absent llama.cpp guesses from the most common tensor type (ggml_type id -> ftype id).
_GUESSED_FILE_TYPE = {
    0: 0,
    1: 1,
    30: 32,
    2: 2,
    3: 3,
    6: 8,
    7: 9,
    8: 7,
    10: 10,
    11: 12,
    12: 15,
    13: 17,
    14: 18,
    34: 36,
    35: 37,
    16: 19,
    17: 20,
    22: 28,
    18: 23,
    19: 24,
    29: 31,
    20: 25,
    23: 30,
    21: 26,
    40: 39,
    41: 40,
    42: 41,
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
    "llama3",
    "llama-v3",
    "llama-bpe",
    "falcon3",
    "falcon-h1",
    "pixtral",
    "midm-2.0",
    "lfm2",
    "jina-v5-nano",
    "tekken",
    "chameleon",
}
# BPE pre-tokenizers for which llama.cpp has no BOS by default.
_PRE_NO_BOS = {"chatglm-bpe", "glm4", "glm5"}
_SPLIT_NAME = re.compile(r"^(?P<prefix>.+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$")


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

    @property
    def kind(self) -> ModelKind:
        """What the model is for: chatting, embedding text, or ranking documents (app.engine.gguf.kind)."""
        return model_kind(self.metadata)


def read_tensor_sizes(path: Union[str, Path]) -> list[tuple[str, int]]:
    """(name, bytes) of every tensor, the other parts of a split model included; a type unknown to the gguf
    package counts as 0 bytes. Raises ModelFileError for an unreadable file."""
    parts = [Path(path)]
    sizes: list[tuple[str, int]] = []
    while parts:
        part = parts.pop(0)
        buf, file_size = open_map(part)
        try:
            header = read_header(part, buf, file_size)
        finally:
            buf.close()
        sizes += [(name, tensor_bytes(dims, t) or 0) for name, dims, t, _o in header.tensors]
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


def _vocab_defaults(
    metadata: dict[str, object],
) -> tuple[str, Optional[str], Optional[int], Optional[int], bool, bool, str]:
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


# What this process read lately, by (path, size, modification time): the CLI's checks, GPU placement and the pair's
# vocabulary facts each ask for the same two files on a first use (issue 21: read each file once).
_RECENT_MAX = 16
_recent: dict[tuple[str, int, int], ModelInfo] = {}
_recent_lock = threading.Lock()


def inspect_gguf(path: Union[str, Path]) -> ModelInfo:
    """Read a model's metadata and tensor infos (never its weights). Raises ModelFileError for an unreadable file."""
    path = Path(path)
    try:
        st = path.stat()
        key: Optional[tuple[str, int, int]] = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    except OSError:
        key = None  # open_map says what is wrong
    with _recent_lock:
        known = _recent.get(key) if key is not None else None
    if known is not None:
        return known
    info = _read_info(path)
    if key is not None:
        with _recent_lock:
            _recent[key] = info
            while len(_recent) > _RECENT_MAX:
                _recent.pop(next(iter(_recent)))
    return info


def _read_info(path: Path) -> ModelInfo:
    buf, file_size = open_map(path)
    try:
        header = read_header(path, buf, file_size)
        data_end = tensor_data_end(header)
        if data_end is not None and data_end > file_size:
            raise ModelFileError(
                f"{path}: truncated: tensor data ends past the end of the file "
                f"(needs {data_end} bytes, the file has {file_size})"
            )
        tokens_digest = ""
        problems: list[str] = []
        if header.tokens is not None:
            tokens_digest = hashlib.blake2b(
                buf[header.tokens.check_start : header.tokens.end], digest_size=16
            ).hexdigest()
            twins = gguf_checks.duplicate_token(buf, header.tokens.start, header.tokens.count)
            if twins is not None:
                problems.append(
                    f"tokens {twins[0]} and {twins[1]} have the same text "
                    f"{twins[2].decode('utf-8', errors='replace')!r}"
                )
    finally:
        buf.close()
    return _model_info(path, file_size, header, tokens_digest, problems)


def _model_info(path: Path, file_size: int, header: Header, tokens_digest: str, problems: list[str]) -> ModelInfo:
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
        sep_id = _special_id(
            meta, "tokenizer.ggml.seperator_token_id", 102 if vocab_type == "WPM" else None, vocab_size
        )
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
    parameter_count = sum(elements(dims) for _n, dims, _t, _o in header.tensors)
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


def _guess_file_type(header: Header) -> Optional[int]:
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
        buf, size = open_map(sibling)
        try:
            header = read_header(sibling, buf, size)
        finally:
            buf.close()
        total += sum(elements(dims) for _n, dims, _t, _o in header.tensors)
    return total
