"""The item models behind the pickers and the sidebar, checked with pytest-qt's qtmodeltester."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from app import library
from app.engine.targets import LocalModel
from app.store import ChatStore
from app.ui.chat.chat_list import CHAT_ID_ROLE, ChatListModel
from app.ui.models.library_model import NGRAM_KEY, NOT_SMALLER, PATH_ROLE, DraftListModel, LibraryModel


def _entries(folder: Path) -> list[library.ModelEntry]:
    return library.scan_library([library.LibraryFolder(folder, "folder")])


def test_library_model_lists_every_file_and_disables_broken_ones(qtmodeltester, model_folder, tiny_models):
    model = LibraryModel()
    model.set_entries(_entries(model_folder))
    qtmodeltester.check(model)
    names = {Path(e.path).name: e for e in model.entries()}
    assert names[tiny_models.target.name].usable
    for broken in (tiny_models.truncated, tiny_models.not_gguf, tiny_models.split_part_second):
        row = model.row_of(str(model_folder / broken.name))
        index = model.index(row, 0)
        assert not (model.flags(index) & Qt.ItemFlag.ItemIsEnabled)
        assert model.entry_at(row).problem in index.data(Qt.ItemDataRole.ToolTipRole)
    row = model.row_of(str(model_folder / tiny_models.target.name))
    assert model.index(row, 0).data(PATH_ROLE) == str(model_folder / tiny_models.target.name)
    assert model.index(row, 3).data() == "F32"


def test_draft_model_offers_compatible_first_then_ngram_then_disabled_with_reason(
    qtmodeltester, model_folder, tiny_models
):
    entries = _entries(model_folder)
    library_model = LibraryModel()
    library_model.set_entries(entries)
    target = LocalModel(model_folder / tiny_models.target.name)
    drafts = DraftListModel()
    drafts.set_choices(library.draft_choices(target, entries), library_model)
    qtmodeltester.check(drafts)
    options = drafts.options()
    keys = [o.key for o in options]
    assert Path(keys[0]).name == tiny_models.draft.name
    assert options[0].detail.startswith("Recommended")
    ngram_row = keys.index(NGRAM_KEY)
    assert all(o.enabled and o.suggested for o in options[: ngram_row + 1])
    # After n-gram: drafts larger than the target (pickable, never suggested), then the incompatible ones.
    later = options[ngram_row + 1 :]
    larger = [o for o in later if o.enabled]
    assert all(not o.suggested and o.detail.startswith(NOT_SMALLER) for o in larger)
    assert not any(o.enabled for o in later[len(larger) :])
    bad = drafts.index(keys.index(str(model_folder / tiny_models.bad_vocab_size.name)))
    assert not (drafts.flags(bad) & Qt.ItemFlag.ItemIsEnabled)
    assert "vocabulary sizes" in bad.data(Qt.ItemDataRole.ToolTipRole)


def test_draft_model_with_no_compatible_draft_still_offers_ngram(qtmodeltester):
    drafts = DraftListModel()
    drafts.set_choices([library.DraftChoice("/m/other.gguf", False, "different tokenizer types")], LibraryModel())
    qtmodeltester.check(drafts)
    assert drafts.option_at(0).key == NGRAM_KEY and drafts.option_at(0).enabled
    assert "No compatible draft" in drafts.option_at(0).detail
    assert not drafts.option_at(1).enabled
    drafts.set_checking()
    qtmodeltester.check(drafts)
    assert drafts.first_enabled_row() == -1


def test_chat_list_model_newest_first_and_rename_by_editing(qtmodeltester, qtbot):
    store = ChatStore()
    first = store.create_chat("First")
    second = store.create_chat("Second")
    model = ChatListModel()
    model.set_chats(store.list_chats())
    qtmodeltester.check(model)
    assert [model.index(r).data(CHAT_ID_ROLE) for r in range(2)] == [second.id, first.id]
    with qtbot.waitSignal(model.sig_rename_requested) as blocker:
        assert model.setData(model.index(1), "  Renamed   chat ")
    assert blocker.args == [first.id, "Renamed chat"]
    assert not model.setData(model.index(1), "   ")
    store.close()
