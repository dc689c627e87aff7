"""The tiny vision model is a real llama.cpp vision pair: llama.cpp's own multimodal tool reads it and a picture."""

from __future__ import annotations

from tests.vision.mtmd_reference import MARKER, mtmd_cli_reply


def test_llama_mtmd_cli_reads_the_tiny_pair_and_each_picture_changes_the_reply(vision_models, pictures):
    replies = [
        mtmd_cli_reply(vision_models.target, vision_models.mmproj, [p], MARKER + "What is this?", 24) for p in pictures
    ]
    assert all(len(r) > 10 for r in replies), replies
    assert len(set(replies)) == len(replies), replies


def test_the_library_lists_the_vision_model_with_its_projector_and_not_the_projector(vision_models):
    from app.library import LibraryFolder, scan_library

    entries = {e.name: e for e in scan_library([LibraryFolder(vision_models.target.parent, "folder")])}
    assert "mmproj-tiny-vision" not in entries
    vision = entries["tiny-vision"]
    assert vision.projector == str(vision_models.mmproj) and "sees pictures" in vision.summary
