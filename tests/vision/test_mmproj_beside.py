"""The projector beside a model is found by llama.cpp's naming, and never given to a model it was not made for."""

from __future__ import annotations

from app.engine.gguf.mmproj import mmproj_beside


def _folder(tmp_path, *names):
    for name in names:
        (tmp_path / name).write_bytes(b"GGUF")
    return tmp_path


def test_the_projector_named_after_the_model_is_found_and_no_other_model_gets_it(tmp_path):
    folder = _folder(
        tmp_path,
        "gemma-3-4b-it-Q4_K_M.gguf",
        "mmproj-gemma-3-4b-it-F16.gguf",
        "Qwen2.5-0.5B-Instruct-Q8_0.gguf",
        "gemma-3-270m-it-Q8_0.gguf",
    )
    assert mmproj_beside(folder / "gemma-3-4b-it-Q4_K_M.gguf") == folder / "mmproj-gemma-3-4b-it-F16.gguf"
    assert mmproj_beside(folder / "Qwen2.5-0.5B-Instruct-Q8_0.gguf") is None
    assert mmproj_beside(folder / "gemma-3-270m-it-Q8_0.gguf") is None


def test_a_folder_of_one_model_and_one_projector_pairs_them_whatever_their_names(tmp_path):
    folder = _folder(tmp_path, "model.gguf", "mmproj-model-f16-other-name.gguf")
    assert mmproj_beside(folder / "model.gguf") == folder / "mmproj-model-f16-other-name.gguf"
