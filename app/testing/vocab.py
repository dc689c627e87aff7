"""The tiny models' vocabularies: a byte-level BPE one (GPT-2 style, with ChatML's special tokens) and a
SentencePiece one, each made from a VocabSpec so a test can ask for a variant (another size, other specials).

Plain Python: the GGUF writer (synthetic.py) writes a Vocab into a model file as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

# GGUF token types (llama.cpp's llama_token_type).
NORMAL, UNKNOWN, CONTROL, _BYTE = 1, 2, 3, 6

# Merges of common English pieces, in rank order. Each is "left right"; both sides exist before the merge.
# "Ġ" is how byte-level BPE writes a space.
_MERGES = (
    "Ġ t",
    "Ġ a",
    "h e",
    "i n",
    "r e",
    "o n",
    "Ġt he",
    "e r",
    "Ġ s",
    "a t",
    "Ġ w",
    "Ġ o",
    "e n",
    "Ġ c",
    "i t",
    "i s",
    "a n",
    "o r",
    "e s",
    "Ġ b",
    "e d",
    "Ġ f",
    "in g",
    "Ġ p",
    "o u",
    "Ġt o",
    "Ġa nd",
    "Ġo f",
    "a r",
    "Ġ m",
    "Ġ d",
    "l l",
    "Ġ h",
    "Ġ i",
    "l e",
    "Ġt h",
    "o m",
    "Ġ l",
    "Ġ n",
    "s t",
    "Ġ re",
    "Ġ in",
    "Ġ is",
    "Ġ it",
    "Ġc on",
    "Ġ y",
    "Ġy ou",
    "Ġ def",
    "Ġre turn",
    "Ġ (",
    "Ġ =",
    "Ċ Ġ",
    "ĊĠ Ġ",
    "Ġ Ġ",
    "ĠĠ Ġ",
    "Ã ©",
)
# The right-hand pieces some merges above need as whole tokens first.
_MERGE_PREREQUISITES = ("nd", "ou", "def", "turn", "return")
_RESERVED_COUNT = 8
_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")

# Pieces for the SentencePiece-style vocabulary ("▁" is SentencePiece's space).
_SPM_PIECES = (
    "▁",
    "▁t",
    "he",
    "▁the",
    "in",
    "er",
    "▁a",
    "on",
    "re",
    "▁s",
    "at",
    "en",
    "▁w",
    "▁o",
    "it",
    "is",
    "an",
    "or",
    "es",
    "▁c",
    "▁to",
    "▁and",
    "▁of",
    "ing",
    "▁in",
    "▁is",
    "▁it",
    "▁you",
    "ll",
    "st",
)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters, which byte-level BPE vocabularies are written in."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    mapping = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + shifted)
            shifted += 1
    return mapping


@dataclass(frozen=True)
class VocabSpec:
    """How a tiny model's tokenizer differs from the standard one; each knob breaks one llama.cpp compat rule."""

    kind: str = "bpe"  # "bpe" (tokenizer.ggml.model gpt2) or "spm" (tokenizer.ggml.model llama)
    add_bos: bool = False
    add_eos: bool = False
    extra_tokens: int = 0  # appended after the special tokens, so every shared id keeps its text
    renamed_token: str | None = None  # the token with this text gets another text, keeping its id
    # Names for the BPE vocabulary's reserved control tokens, in order: a model family's markers (Mistral's
    # [TOOL_CALLS], Harmony's <|channel|>), so its chat template's markup tokenizes as the real model's does.
    special_names: tuple[str, ...] = ()


VOCAB_VARIANTS: dict[str, VocabSpec] = {
    "standard": VocabSpec(),
    "spm": VocabSpec(kind="spm"),
    "add_bos": VocabSpec(add_bos=True),
    "add_eos": VocabSpec(add_eos=True),
    "extra_200": VocabSpec(extra_tokens=200),
    "extra_8": VocabSpec(extra_tokens=8),
    # A reserved token: well past id 5, where llama.cpp starts comparing texts, and never produced by a merge.
    "renamed_token": VocabSpec(renamed_token="<|reserved_2|>"),
}


@dataclass(frozen=True)
class Vocab:
    tokens: list[str]
    token_types: list[int]
    model: str  # tokenizer.ggml.model
    merges: list[str] = field(default_factory=list)
    scores: list[float] | None = None
    bos_id: int = 0
    eos_id: int = 0
    eot_id: int | None = None
    add_bos: bool = False
    add_eos: bool = False
    # Ids a greedy tiny model is allowed to produce: printable text only, so its output reads as text and never
    # ends early on an end-of-generation token.
    output_ids: list[int] = field(default_factory=list)


def build_vocab(spec: VocabSpec) -> Vocab:
    vocab = _build_spm_vocab() if spec.kind == "spm" else _build_bpe_vocab()
    tokens = list(vocab.tokens)
    types = list(vocab.token_types)
    for i in range(spec.extra_tokens):
        tokens.append(f"<|extra_{i}|>")
        types.append(CONTROL)
    if spec.renamed_token is not None:
        tokens[tokens.index(spec.renamed_token)] = spec.renamed_token.replace("|>", "_renamed|>")
    if len(spec.special_names) > _RESERVED_COUNT or spec.special_names and spec.kind != "bpe":
        raise ValueError(f"at most {_RESERVED_COUNT} special names, for the BPE vocabulary")
    for i, name in enumerate(spec.special_names):
        tokens[tokens.index(f"<|reserved_{i}|>")] = name
    scores = vocab.scores + [0.0] * spec.extra_tokens if vocab.scores is not None else None
    return replace(
        vocab,
        tokens=tokens,
        token_types=types,
        scores=scores,
        add_bos=spec.add_bos or vocab.add_bos,
        add_eos=spec.add_eos or vocab.add_eos,
    )


def _build_bpe_vocab() -> Vocab:
    byte_chars = bytes_to_unicode()
    tokens = [byte_chars[b] for b in range(256)]
    types = [NORMAL] * 256
    merges: list[str] = []
    known = set(tokens)
    for word in _MERGE_PREREQUISITES:
        # Spell each prerequisite out as a chain of merges, so it is reachable by the tokenizer.
        piece = word[0]
        for ch in word[1:]:
            merged = piece + ch
            if merged not in known:
                merges.append(f"{piece} {ch}")
                tokens.append(merged)
                types.append(NORMAL)
                known.add(merged)
            piece = merged
    for merge in _MERGES:
        left, right = merge.split(" ")
        if left not in known or right not in known:
            raise AssertionError(f"merge {merge!r} needs both sides in the vocabulary first")
        merged = left + right
        if merged in known:
            continue
        merges.append(merge)
        tokens.append(merged)
        types.append(NORMAL)
        known.add(merged)
    for i in range(_RESERVED_COUNT):
        tokens.append(f"<|reserved_{i}|>")
        types.append(CONTROL)
    eos_id = len(tokens)
    tokens.extend(_SPECIALS)
    types.extend([CONTROL] * len(_SPECIALS))
    printable = {byte_chars[b] for b in range(0x20, 0x7F)} | {byte_chars[0x0A]}
    output_ids = [i for i, t in enumerate(tokens) if types[i] == NORMAL and (i >= 256 or t in printable)]
    return Vocab(
        tokens=tokens,
        token_types=types,
        model="gpt2",
        merges=merges,
        bos_id=eos_id,
        eos_id=eos_id,
        eot_id=eos_id + 2,
        add_bos=False,
        add_eos=False,
        output_ids=output_ids,
    )


def _build_spm_vocab() -> Vocab:
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [UNKNOWN, CONTROL, CONTROL] + [_BYTE] * 256
    scores = [0.0] * len(tokens)
    # Letters as whole pieces so ordinary text needs no byte fallback.
    pieces = [chr(c) for c in range(ord("a"), ord("z") + 1)] + list(_SPM_PIECES)
    for rank, piece in enumerate(pieces):
        tokens.append(piece)
        types.append(NORMAL)
        scores.append(-float(rank))
    tokens.extend(["<|im_start|>", "<|im_end|>"])
    types.extend([CONTROL, CONTROL])
    scores.extend([0.0, 0.0])
    output_ids = [i for i, t in enumerate(types) if t == NORMAL]
    return Vocab(
        tokens=tokens,
        token_types=types,
        model="llama",
        scores=scores,
        bos_id=1,
        eos_id=2,
        eot_id=len(tokens) - 1,
        add_bos=True,
        add_eos=False,
        output_ids=output_ids,
    )
