"""Reading GGUF metadata: the right values from good files, a clear ModelFileError from every broken one."""

from __future__ import annotations

import os
import re
import struct

import pytest

from app.engine.errors import ModelFileError
from app.engine.gguf.info import format_parameter_count, inspect_gguf, read_token_texts
from app.testing.synthetic import TARGET_LAYERS
from app.testing.vocab import VOCAB_VARIANTS, build_vocab


def _gguf_bytes(version: int = 3, kvs: bytes = b"", n_kv: int = 0, n_tensors: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv) + kvs


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def test_tiny_target_metadata(tiny_models):
    info = inspect_gguf(tiny_models.target)
    vocab = build_vocab(VOCAB_VARIANTS["standard"])
    assert info.name == "Tiny Target"
    assert info.architecture == "llama"
    assert info.quantization == "F32" and not info.file_type_guessed
    assert info.context_length == 2048
    assert (info.vocab_type, info.vocab_size) == ("BPE", len(vocab.tokens))
    assert (info.bos_id, info.eos_id, info.eot_id) == (vocab.bos_id, vocab.eos_id, vocab.eot_id)
    assert (info.add_bos, info.add_eos) == (False, False)
    assert "<|im_start|>" in info.chat_template
    assert (info.split_count, info.split_index, info.usable, info.problem) == (1, 0, True, "")
    assert info.file_size == tiny_models.target.stat().st_size
    assert info.tensor_count == 3 + 9 * TARGET_LAYERS


def test_parameter_count_matches_llama_cpp(tiny_models):
    import llama_cpp

    params = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(str(tiny_models.target).encode(), params)
    try:
        assert inspect_gguf(tiny_models.target).parameter_count == llama_cpp.llama_model_n_params(model)
    finally:
        llama_cpp.llama_model_free(model)


def test_draft_is_smaller_and_spm_defaults(tiny_models):
    assert inspect_gguf(tiny_models.draft).parameter_count < inspect_gguf(tiny_models.target).parameter_count / 3
    spm = inspect_gguf(tiny_models.bad_vocab_type)
    assert (spm.vocab_type, spm.add_bos, spm.bos_id, spm.eos_id) == ("SPM", True, 1, 2)


def test_token_texts(tiny_models):
    vocab = build_vocab(VOCAB_VARIANTS["standard"])
    assert read_token_texts(tiny_models.target) == [t.encode() for t in vocab.tokens]
    assert read_token_texts(tiny_models.target, 5, 8) == [t.encode() for t in vocab.tokens[5:8]]
    assert inspect_gguf(tiny_models.draft).tokens_digest == inspect_gguf(tiny_models.target).tokens_digest
    assert inspect_gguf(tiny_models.bad_token_text).tokens_digest != inspect_gguf(tiny_models.target).tokens_digest


def test_split_parts_are_flagged(tiny_models):
    first = inspect_gguf(tiny_models.split_part)
    assert (first.split_index, first.split_count, first.usable) == (0, 2, False)
    assert "tiny-00002-of-00002.gguf" in first.problem and "missing" in first.problem
    second = inspect_gguf(tiny_models.split_part_second)
    assert (second.split_index, second.usable) == (1, False)
    assert "open the first part" in second.problem


def test_complete_split_counts_every_part(tiny_models, tmp_path):
    for name in ("tiny-00001-of-00002.gguf", "tiny-00002-of-00002.gguf"):
        source = tiny_models.split_part if name.startswith("tiny-00001") else tiny_models.split_part_second
        (tmp_path / name).write_bytes(source.read_bytes())
    info = inspect_gguf(tmp_path / "tiny-00001-of-00002.gguf")
    assert info.usable, info.problem
    assert info.parameter_count == 2 * inspect_gguf(tiny_models.target).parameter_count


@pytest.mark.parametrize(
    "member, message",
    [("truncated", "truncated"), ("not_gguf", "not a GGUF file (bad magic)")],
)
def test_broken_members(tiny_models, member, message):
    path = getattr(tiny_models, member)
    with pytest.raises(ModelFileError, match=re.escape(message)) as caught:
        inspect_gguf(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty"),
        (b"GG", "truncated: metadata ends past the end of the file"),
        (_gguf_bytes(version=99), "unsupported GGUF version 99"),
        (_gguf_bytes(version=1), "unsupported GGUF version 1"),
        (b"GGUF" + struct.pack(">IQQ", 3, 0, 0), "big-endian"),
        (_gguf_bytes(n_kv=1), "truncated: metadata ends past the end of the file"),
        (_gguf_bytes(n_kv=1, kvs=_string("k") + struct.pack("<I", 77)), "unknown value type 77"),
        (_gguf_bytes(n_kv=1, kvs=_string("k") + struct.pack("<IIQ", 9, 9, 1)), "nested array"),
        (_gguf_bytes(n_kv=1, kvs=struct.pack("<Q", 2**62)), "truncated"),
        (_gguf_bytes(n_kv=2**63), "truncated"),
    ],
)
def test_corrupt_headers(tmp_path, content, message):
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match=message):
        inspect_gguf(path)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(ModelFileError, match="file not found"):
        inspect_gguf(tmp_path / "absent.gguf")
    with pytest.raises(ModelFileError, match="folder"):
        inspect_gguf(tmp_path)


def test_every_truncation_is_reported(tiny_models, tmp_path):
    whole = tiny_models.draft.read_bytes()
    metadata_end = whole.index(b"token_embd.weight") + 200
    offsets = set(range(0, 64)) | set(range(64, metadata_end, 7)) | set(range(metadata_end, len(whole), 4099))
    path = tmp_path / "cut.gguf"
    path.write_bytes(whole)
    assert inspect_gguf(path).usable
    all_texts = read_token_texts(tiny_models.draft)
    for offset in sorted(offsets, reverse=True):  # cutting a file shorter is cheaper than rewriting it
        os.truncate(path, offset)
        with pytest.raises(ModelFileError) as caught:
            inspect_gguf(path)
        assert str(path) in str(caught.value)
        # The token list alone may survive a cut in the weights; then it reads whole.
        try:
            assert read_token_texts(path) == all_texts
        except ModelFileError:
            pass


def test_unknown_tokenizer_is_unusable(tmp_path):
    kvs = _string("general.architecture") + struct.pack("<I", 8) + _string("llama")
    kvs += _string("tokenizer.ggml.model") + struct.pack("<I", 8) + _string("martian")
    path = tmp_path / "odd.gguf"
    path.write_bytes(_gguf_bytes(n_kv=2, kvs=kvs))
    info = inspect_gguf(path)
    assert not info.usable and "unknown tokenizer 'martian'" in info.problem


def test_format_parameter_count():
    assert format_parameter_count(1_543_714_304) == "1.54B"
    assert format_parameter_count(134_515_008) == "135M"
    assert format_parameter_count(79_680) == "79.7K"
    assert format_parameter_count(12) == "12"


@pytest.mark.real_models
def test_real_models(real_models):
    qwen = inspect_gguf(real_models["target"])
    assert (qwen.architecture, qwen.vocab_type, qwen.vocab_size) == ("qwen2", "BPE", 151936)
    assert (qwen.quantization, qwen.context_length, qwen.add_bos) == ("Q4_K_M", 32768, False)
    assert qwen.eos_id == 151645 and qwen.usable
    assert 1.5e9 < qwen.parameter_count < 1.8e9
    draft = inspect_gguf(real_models["draft"])
    assert draft.parameter_count < qwen.parameter_count / 2
    gemma = inspect_gguf(real_models["gemma"])
    assert (gemma.architecture, gemma.vocab_type, gemma.vocab_size) == ("gemma3", "SPM", 262144)
    smollm = inspect_gguf(real_models["smollm"])
    assert (smollm.architecture, smollm.vocab_size, smollm.quantization) == ("llama", 49152, "Q4_1")
    texts = read_token_texts(real_models["target"], 151643, 151646)
    assert texts == [b"<|endoftext|>", b"<|im_start|>", b"<|im_end|>"]
