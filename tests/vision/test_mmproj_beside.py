"""The projector beside a model is found by llama.cpp's naming, and never given to a model it was not made for."""

from __future__ import annotations

from app.engine.gguf.mmproj import mmproj_beside, name_beside


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


def test_a_generically_named_projector_is_saved_under_a_name_that_pairs_it_with_its_model_only(tmp_path):
    assert name_beside("gemma-3-4b-it-Q4_K_M.gguf", "mmproj-model-f16.gguf") == "mmproj-gemma-3-4b-it-Q4_K_M-f16.gguf"
    assert (
        name_beside("gemma-3-4b-it-qat-Q4_0.gguf", "mmproj-model-f16-4B.gguf") == "mmproj-gemma-3-4b-it-qat-Q4_0.gguf"
    )
    # A name that pairs already is kept as published.
    kept = "mmproj-google_gemma-3-4b-it-f16.gguf"
    assert name_beside("google_gemma-3-4b-it-Q4_K_M.gguf", kept) == kept
    folder = _folder(
        tmp_path,
        "gemma-3-4b-it-Q4_K_M.gguf",
        "gemma-3-4b-it-Q8_0.gguf",
        name_beside("gemma-3-4b-it-Q4_K_M.gguf", "mmproj-model-f16.gguf"),
        name_beside("gemma-3-4b-it-Q8_0.gguf", "mmproj-model-f16.gguf"),
    )
    assert mmproj_beside(folder / "gemma-3-4b-it-Q4_K_M.gguf") == folder / "mmproj-gemma-3-4b-it-Q4_K_M-f16.gguf"
    assert mmproj_beside(folder / "gemma-3-4b-it-Q8_0.gguf") == folder / "mmproj-gemma-3-4b-it-Q8_0-f16.gguf"
