"""Draft compatibility: llama.cpp's rules from metadata, cached, and checked against llama.cpp itself."""

from __future__ import annotations

import os

import pytest

from app.engine.gguf import compat
from app.engine.gguf import compat_cache
from app.engine.gguf.compat import compatibility
from app.engine.gguf.compat_cache import default_cache
from app.library import suggest_drafts
from app.engine.errors import ModelFileError
from app.engine.gguf.info import inspect_gguf, read_token_texts

VOCAB_TYPE_NAMES = {0: "NONE", 1: "SPM", 2: "BPE", 3: "WPM", 4: "UGM", 5: "RWKV", 6: "PLAMO2", 7: "TEST"}


@pytest.mark.parametrize("member", ["draft", "draft_identical", "ok_vocab_size_close"])
def test_compatible_drafts(tiny_models, member):
    result = compatibility(tiny_models.target, getattr(tiny_models, member))
    assert result.compatible and result.reason == ""


@pytest.mark.parametrize(
    "member, rule, words",
    [
        ("bad_vocab_type", "vocab_type", "different tokenizer types: target BPE, draft SPM"),
        ("bad_bos", "bos", "the draft starts every prompt with a BOS token and the target does not"),
        ("bad_eos", "eos", "the draft ends every prompt with an EOS token and the target does not"),
        ("bad_vocab_size", "vocab_size", "different vocabulary sizes: target 333, draft 533 (more than 128 apart)"),
        ("bad_token_text", "token_text", "differs: target '<|reserved_2|>', draft '<|reserved_2_renamed|>'"),
        ("split_part_second", "unusable", "open the first part"),
    ],
)
def test_incompatible_drafts_say_why(tiny_models, member, rule, words):
    result = compatibility(tiny_models.target, getattr(tiny_models, member))
    assert not result.compatible
    assert result.rule == rule
    assert words in result.reason


def test_renamed_token_is_named_by_id(tiny_models):
    texts = read_token_texts(tiny_models.target)
    token_id = texts.index(b"<|reserved_2|>")
    reason = compatibility(tiny_models.target, tiny_models.bad_token_text).reason
    assert reason.startswith(f"token {token_id} differs")


def test_rules_are_symmetric_enough(tiny_models):
    # The target side of each rule is worded too.
    assert "the target starts every prompt" in compatibility(tiny_models.bad_bos, tiny_models.draft).reason


def test_unreadable_files_raise(tiny_models, tmp_path):
    for broken in (tiny_models.truncated, tiny_models.not_gguf, tmp_path / "absent.gguf"):
        with pytest.raises(ModelFileError):
            compatibility(tiny_models.target, broken)
        with pytest.raises(ModelFileError):
            compatibility(broken, tiny_models.draft)


def _forbid_reading(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("the cache should have answered without reading the model file")

    monkeypatch.setattr(compat_cache, "inspect_gguf", refuse)
    monkeypatch.setattr(compat, "read_token_texts", refuse)


def test_second_check_comes_from_the_cache(tiny_models, monkeypatch):
    first = compatibility(tiny_models.target, tiny_models.bad_token_text)
    with monkeypatch.context() as patch:
        _forbid_reading(patch)
        assert compatibility(tiny_models.target, tiny_models.bad_token_text) == first
        # A new process would start with an empty memory; the file on disk answers.
        default_cache().clear_memory()
        assert compatibility(tiny_models.target, tiny_models.bad_token_text) == first
    assert (default_cache().path).is_file()


def test_changed_file_is_checked_again(tiny_models, tmp_path, monkeypatch):
    draft = tmp_path / "draft.gguf"
    draft.write_bytes(tiny_models.draft.read_bytes())
    assert compatibility(tiny_models.target, draft).compatible
    draft.write_bytes(tiny_models.bad_token_text.read_bytes())  # same size: only the mtime tells
    stat = draft.stat()
    os.utime(draft, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    calls = []
    real_inspect = compat_cache.inspect_gguf
    monkeypatch.setattr(compat_cache, "inspect_gguf", lambda path: calls.append(path) or real_inspect(path))
    assert not compatibility(tiny_models.target, draft).compatible
    assert calls == [draft]


def test_damaged_cache_file_is_ignored(tiny_models):
    path = default_cache().path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    default_cache().clear_memory()
    assert compatibility(tiny_models.target, tiny_models.draft).compatible


def test_suggestions_rank_good_drafts_first(tiny_models):
    suggestions = suggest_drafts(tiny_models.target, [tiny_models.target, *tiny_models.all_paths()])
    paths = [s.path for s in suggestions]
    assert tiny_models.target not in paths
    assert len(paths) == len(set(paths)) == len(tiny_models.all_paths()) - 1
    recommended = [s.path for s in suggestions if s.recommended]
    assert set(recommended) == {tiny_models.draft, tiny_models.ok_vocab_size_close}
    assert paths[: len(recommended)] == recommended
    # The identical draft is compatible but no faster: after the good ones, before the refused ones.
    identical = paths.index(tiny_models.draft_identical)
    assert identical == len(recommended) and suggestions[identical].compatible
    refused = suggestions[identical + 1 :]
    assert all(not s.compatible and s.reason for s in refused)
    assert {s.path for s in refused} >= {tiny_models.bad_vocab_type, tiny_models.truncated, tiny_models.not_gguf}


def test_suggestions_need_a_readable_target(tiny_models):
    with pytest.raises(ModelFileError):
        suggest_drafts(tiny_models.not_gguf, [tiny_models.draft])


@pytest.mark.real_models
def test_real_pairs(real_models):
    assert compatibility(real_models["target"], real_models["draft"]).compatible
    gemma = compatibility(real_models["target"], real_models["gemma"])
    assert not gemma.compatible and gemma.rule == "vocab_type"
    smollm = compatibility(real_models["target"], real_models["smollm"])
    assert not smollm.compatible and "151936" in smollm.reason and "49152" in smollm.reason
    ranked = suggest_drafts(real_models["target"], real_models.values())
    assert ranked[0].path == real_models["draft"] and ranked[0].recommended


def _llama_vocab_facts(llama_cpp, path):
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    assert model, f"llama.cpp could not load {path}"
    try:
        vocab = llama_cpp.llama_model_get_vocab(model)

        def token(value):
            return None if value == llama_cpp.LLAMA_TOKEN_NULL else value

        n_tokens = llama_cpp.llama_vocab_n_tokens(vocab)
        return {
            "vocab_type": VOCAB_TYPE_NAMES[llama_cpp.llama_vocab_type(vocab)],
            "vocab_size": n_tokens,
            "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
            "add_eos": bool(llama_cpp.llama_vocab_get_add_eos(vocab)),
            "bos_id": token(llama_cpp.llama_vocab_bos(vocab)),
            "eos_id": token(llama_cpp.llama_vocab_eos(vocab)),
            "eot_id": token(llama_cpp.llama_vocab_eot(vocab)),
            "texts": [llama_cpp.llama_vocab_get_text(vocab, i) for i in range(n_tokens)],
        }
    finally:
        llama_cpp.llama_model_free(model)


def _assert_matches_llama_cpp(llama_cpp, path):
    expected = _llama_vocab_facts(llama_cpp, path)
    info = inspect_gguf(path)
    for field in ("vocab_type", "vocab_size", "add_bos", "add_eos", "bos_id", "eos_id"):
        assert getattr(info, field) == expected[field], (path.name, field)
    if info.eot_id is not None:  # we only report an EOT the file names; llama.cpp may also find one by its text
        assert info.eot_id == expected["eot_id"]
    assert read_token_texts(path) == expected["texts"]


@pytest.mark.parametrize("member", ["target", "bad_vocab_type", "bad_bos", "bad_eos", "bad_vocab_size"])
def test_tiny_metadata_matches_llama_cpp(tiny_models, member):
    import llama_cpp

    _assert_matches_llama_cpp(llama_cpp, getattr(tiny_models, member))


@pytest.mark.real_models
@pytest.mark.parametrize("key", ["target", "draft", "gemma", "smollm"])
def test_real_metadata_matches_llama_cpp(real_models, key):
    import llama_cpp

    _assert_matches_llama_cpp(llama_cpp, real_models[key])
