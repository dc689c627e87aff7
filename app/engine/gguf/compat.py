"""Can this draft model speculate for that target? llama.cpp's rules, answered from the files' metadata.

The rules are those of llama.cpp's common_speculative_are_compatible (common/speculative.cpp), in its order: same
tokenizer type; same add-BOS flag and, when BOS is added, the same BOS id; the same for EOS; vocabulary sizes at most
128 apart; identical token texts for every id from 5 up to the smaller size. We answer without loading either
model: token texts are compared by digest and only read one by one when the digests disagree.

Answers are cached by app.engine.gguf.compat_cache. Ranking drafts for the model picker is the library's job
(app.library.suggest_drafts).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from app.engine.gguf.compat_cache import CompatCache, VocabFacts, default_cache, file_key
from app.engine.gguf.info import TOKEN_CHECK_START, read_token_texts

MAX_VOCAB_SIZE_DIFFERENCE = 128  # SPEC_VOCAB_MAX_SIZE_DIFFERENCE


@dataclass(frozen=True)
class Compatibility:
    compatible: bool
    reason: str  # the first rule that fails, for a person; "" when compatible
    rule: str = ""  # "unusable", "vocab_type", "bos", "eos", "vocab_size", "token_text"; "" when compatible


def compatibility(target: Path, draft: Path, *, cache: Optional[CompatCache] = None) -> Compatibility:
    """Whether `draft` can speculate for `target` under llama.cpp's rules. Raises ModelFileError for an unreadable file."""
    cache = cache or default_cache()
    result = check_pair(Path(target), Path(draft), cache)
    cache.save()
    return result


def check_pair(target: Path, draft: Path, cache: CompatCache) -> Compatibility:
    """compatibility() through `cache`, which the caller saves (checking many pairs, once at the end)."""
    target_key, draft_key = file_key(target), file_key(draft)
    cached = cache.pair(target_key, draft_key)
    if cached is not None:
        try:
            return Compatibility(**cached)
        except TypeError:
            pass  # written by another version: check again
    result = _check(target, draft, cache.facts(target, target_key), cache.facts(draft, draft_key))
    cache.put_pair(target_key, draft_key, asdict(result))
    return result


def _check(target: Path, draft: Path, tgt: VocabFacts, dft: VocabFacts) -> Compatibility:
    if not tgt.usable:
        return Compatibility(False, f"the target cannot be used: {tgt.problem}", "unusable")
    if not dft.usable:
        return Compatibility(False, f"the draft cannot be used: {dft.problem}", "unusable")
    if tgt.vocab_type != dft.vocab_type:
        return Compatibility(
            False, f"different tokenizer types: target {tgt.vocab_type}, draft {dft.vocab_type}", "vocab_type"
        )
    if tgt.add_bos != dft.add_bos:
        adds, lacks = ("target", "draft") if tgt.add_bos else ("draft", "target")
        return Compatibility(False, f"the {adds} starts every prompt with a BOS token and the {lacks} does not", "bos")
    if tgt.add_bos and tgt.bos_id != dft.bos_id:
        return Compatibility(False, f"different BOS tokens: target {tgt.bos_id}, draft {dft.bos_id}", "bos")
    if tgt.add_eos != dft.add_eos:
        adds, lacks = ("target", "draft") if tgt.add_eos else ("draft", "target")
        return Compatibility(False, f"the {adds} ends every prompt with an EOS token and the {lacks} does not", "eos")
    if tgt.add_eos and tgt.eos_id != dft.eos_id:
        return Compatibility(False, f"different EOS tokens: target {tgt.eos_id}, draft {dft.eos_id}", "eos")
    if abs(tgt.vocab_size - dft.vocab_size) > MAX_VOCAB_SIZE_DIFFERENCE:
        return Compatibility(
            False,
            f"different vocabulary sizes: target {tgt.vocab_size}, draft {dft.vocab_size} "
            f"(more than {MAX_VOCAB_SIZE_DIFFERENCE} apart)",
            "vocab_size",
        )
    if tgt.vocab_size == dft.vocab_size and tgt.tokens_digest == dft.tokens_digest:
        return Compatibility(True, "")
    return _compare_token_texts(target, draft, min(tgt.vocab_size, dft.vocab_size))


def _compare_token_texts(target: Path, draft: Path, stop: int) -> Compatibility:
    target_texts = read_token_texts(target, TOKEN_CHECK_START, stop)
    draft_texts = read_token_texts(draft, TOKEN_CHECK_START, stop)
    for offset, (tgt_text, dft_text) in enumerate(zip(target_texts, draft_texts)):
        # llama.cpp compares C strings: a NUL byte ends the text.
        if tgt_text.split(b"\0", 1)[0] != dft_text.split(b"\0", 1)[0]:
            token_id = TOKEN_CHECK_START + offset
            return Compatibility(
                False, f"token {token_id} differs: target {_show(tgt_text)}, draft {_show(dft_text)}", "token_text"
            )
    return Compatibility(True, "")


def _show(text: bytes) -> str:
    return repr(text.decode("utf-8", errors="replace"))
