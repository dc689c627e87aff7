"""The synthetic model family: every model llama.cpp should load does load and generate, and drafts agree as planned."""

from __future__ import annotations

import ctypes

import llama_cpp
import pytest

from app.testing.synthetic import CHATML_TEMPLATE, make_model_set
from tests.support.acceptance import greedy_acceptance

LOADABLE = (
    "target",
    "draft",
    "draft_identical",
    "ok_vocab_size_close",
    "bad_vocab_type",
    "bad_bos",
    "bad_eos",
    "bad_vocab_size",
    "bad_token_text",
)


def test_model_set_is_reused_when_already_written(tiny_models, tmp_path):
    first = make_model_set(tmp_path)
    stamps = {p: p.stat().st_mtime_ns for p in first.all_paths()}
    again = make_model_set(tmp_path)
    assert again == first
    assert {p: p.stat().st_mtime_ns for p in again.all_paths()} == stamps


def test_broken_files_look_the_part(tiny_models):
    assert tiny_models.truncated.stat().st_size == tiny_models.target.stat().st_size // 2
    assert tiny_models.truncated.read_bytes()[:4] == b"GGUF"
    assert tiny_models.not_gguf.read_bytes()[:4] != b"GGUF"
    assert tiny_models.split_part.name == "tiny-00001-of-00002.gguf"
    assert not (tiny_models.split_part.parent / "tiny-00002-of-00002.gguf").exists()


@pytest.mark.parametrize("member", LOADABLE)
def test_model_loads_and_generates(tiny_models, member):
    # One thread (tests.support.acceptance says why).
    llm = llama_cpp.Llama(str(getattr(tiny_models, member)), n_ctx=256, n_threads=1, n_threads_batch=1, verbose=False)
    try:
        out = llm.create_completion("Hello", max_tokens=64, temperature=0.0)
    finally:
        llm.close()
    # Special tokens have zero output rows, so a greedy tiny model never stops early.
    assert out["usage"]["completion_tokens"] == 64
    assert out["choices"][0]["text"].strip()


def test_vocab_as_llama_cpp_sees_it(tiny_models):
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(tiny_models.target).encode(), params)
    assert model
    try:
        vocab = llama_cpp.llama_model_get_vocab(model)
        assert llama_cpp.llama_vocab_type(vocab) == llama_cpp.LLAMA_VOCAB_TYPE_BPE
        assert not llama_cpp.llama_vocab_get_add_bos(vocab)
        eos = llama_cpp.llama_vocab_eos(vocab)
        eot = llama_cpp.llama_vocab_eot(vocab)
        assert llama_cpp.llama_vocab_get_text(vocab, eos) == b"<|endoftext|>"
        assert llama_cpp.llama_vocab_get_text(vocab, eot) == b"<|im_end|>"
        assert llama_cpp.llama_vocab_is_eog(vocab, eot)

        # llama.cpp recognises the stored template as ChatML.
        template = llama_cpp.llama_model_chat_template(model, None)
        assert template == CHATML_TEMPLATE.encode()
        messages = (llama_cpp.llama_chat_message * 1)()
        messages[0].role = b"user"
        messages[0].content = b"hi"
        buf = ctypes.create_string_buffer(512)
        n = llama_cpp.llama_chat_apply_template(template, messages, 1, True, buf, len(buf))
        assert buf.raw[:n].decode() == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    finally:
        llama_cpp.llama_model_free(model)


@pytest.mark.slow
def test_draft_acceptance_is_partial(tiny_models):
    rate = greedy_acceptance(tiny_models.target, tiny_models.draft)
    assert 0.3 <= rate <= 0.9, rate


def test_identical_draft_is_always_accepted(tiny_models):
    assert greedy_acceptance(tiny_models.target, tiny_models.draft_identical, prompts=("Hello",)) == 1.0
