"""Projects in the real window over the scripted engine: made, renamed and set up from the chat list; a new chat in
one inherits its model and its instructions reach the engine; chats move in and out (menu and drag); deleting one
keeps its chats when asked; a project goes out to one file and comes back in."""

from __future__ import annotations

import json

from PySide6.QtCore import QModelIndex, Qt

from app.ui.chat.chat_tree import CHAT_ID_ROLE, PROJECT_ID_ROLE
from tests.ui.window_helpers import choose_pair, send_and_wait


def _headers(window) -> list[str]:
    model = window.chat_list
    return [model.index(r).data() for r in range(model.rowCount()) if model.index(r).data(PROJECT_ID_ROLE) is not None]


def _chats_in(window, project_id) -> list[str]:
    model = window.chat_list
    header = model.project_index(project_id)
    return [model.index(r, 0, header).data() for r in range(model.rowCount(header))]


def _loose(window) -> list[str]:
    model = window.chat_list
    return [model.index(r).data() for r in range(model.rowCount()) if model.index(r).data(CHAT_ID_ROLE) is not None]


def _menu_action(window, index, *path):
    menu = window.sidebar.menu_for(index)
    for name in path[:-1]:
        menu = next(a.menu() for a in menu.actions() if a.text() == name)
    return next(a for a in menu.actions() if a.text() == path[-1])


def test_a_new_chat_in_a_project_inherits_its_model_and_instructions(
    make_window, qtbot, fake_engine, model_folder, tiny_models, qtmodeltester
):
    window = make_window(
        engine_factory=fake_engine, presets=[{"name": "Terse", "temperature": 0.5, "system_prompt": "Be brief."}]
    )
    projects = window.projects
    projects.ask_name = lambda title, current="": "Garden"
    window.sidebar.project_button.click()
    (project,) = window.store.projects.list_projects()
    assert _headers(window) == ["Garden"]

    # Renamed in place, as a chat is: the header's name edited.
    window.chat_list.setData(window.chat_list.project_index(project.id), "  Garden   notes ")
    qtbot.waitUntil(lambda: _headers(window) == ["Garden notes"], timeout=5000)

    # Its settings: instructions and a model, chosen in the dialog.
    target = str(model_folder / tiny_models.target.name)

    def fill(dialog):
        dialog.instructions.setPlainText("You answer about plants only.")
        dialog.model.setCurrentIndex(dialog.model.findData(target))
        dialog.preset.setCurrentIndex(dialog.preset.findData("Terse"))
        dialog.add_documents(["/docs/roses.md", "/docs/roses.md", "/docs/soil"])
        return True

    projects.ask_settings = fill
    with qtbot.waitSignal(projects.sig_documents_changed) as documents:
        _menu_action(window, window.chat_list.project_index(project.id), "Project settings…").trigger()
    assert documents.args == [project.id, ("/docs/roses.md", "/docs/soil")]
    stored = window.store.projects.get_project(project.id)
    assert stored.target_path == target and stored.documents == ("/docs/roses.md", "/docs/soil")

    # A loose chat first, on no model's instructions.
    assert window.session.target is None
    _menu_action(window, window.chat_list.project_index(project.id), "New chat in project").trigger()
    qtbot.waitUntil(window.models_ready, timeout=20000)
    assert window.session.target_key() == target  # the project's model, chosen for the new chat
    send_and_wait(qtbot, window, "When do roses bloom?")
    # The project's instructions, then the preset's prompt; the preset's sampling too.
    system = {"role": "system", "content": "You answer about plants only.\n\nBe brief."}
    assert fake_engine.requests[-1][0] == system and fake_engine.configs[-1]["temperature"] == 0.5
    chat = window.store.get_chat(window.conversation.chat_id)
    assert chat.project_id == project.id and chat.settings.target_path == target and chat.settings.preset == "Terse"
    projects.rename_project(project.id, "Roses")  # the instructions stay with the project, whatever its name
    send_and_wait(qtbot, window, "And lilies?")
    assert fake_engine.requests[-1][0] == system
    qtbot.waitUntil(lambda: _chats_in(window, project.id) == ["When do roses bloom?"], timeout=5000)
    assert _headers(window) == ["Roses"]
    qtmodeltester.check(window.chat_list)

    # A plain new chat afterwards is in no project and reads no instructions.
    window.new_chat()
    send_and_wait(qtbot, window, "Unrelated")
    assert window.store.get_chat(window.conversation.chat_id).project_id is None
    assert fake_engine.requests[-1][0]["role"] != "system"
    assert _loose(window) == ["Unrelated"]


def test_move_in_and_out_search_within_delete_keeping_chats(
    make_window, qtbot, fake_engine, model_folder, tiny_models, qtmodeltester
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    send_and_wait(qtbot, window, "about apples")
    apples = window.conversation.chat_id
    window.new_chat()
    send_and_wait(qtbot, window, "about pears")
    pears = window.conversation.chat_id
    window.projects.ask_name = lambda title, current="": "Fruit"
    project = window.projects.new_project()

    # Moved in from the chat's menu, then out again by a drag onto the chats in no project.
    _menu_action(window, window.chat_list.index_of(apples), "Move to project", "Fruit").trigger()
    assert _chats_in(window, project.id) == ["about apples"] and _loose(window) == ["about pears"]
    model = window.chat_list
    data = model.mimeData([model.index_of(pears)])
    assert model.dropMimeData(data, model.supportedDropActions(), -1, 0, model.project_index(project.id))
    qtbot.waitUntil(lambda: len(_chats_in(window, project.id)) == 2, timeout=5000)
    data = model.mimeData([model.index_of(apples)])
    assert model.dropMimeData(data, model.supportedDropActions(), -1, 0, QModelIndex())
    qtbot.waitUntil(lambda: _loose(window) == ["about apples"], timeout=5000)
    qtmodeltester.check(model)

    # Clicking the header scopes the search to the project, and the box says so.
    window.sidebar._on_clicked(model.project_index(project.id))
    assert window.sidebar.search.placeholderText() == "Search in “Fruit”"
    window.projects.rename_project(project.id, "Fruits")
    assert window.sidebar.search.placeholderText() == "Search in “Fruits”"
    with qtbot.waitSignal(window.chat_lists.sig_listed, timeout=5000):
        window.sidebar.search.setText("about")
    assert _chats_in(window, project.id) == ["about pears"] and _loose(window) == []
    window.sidebar.search.clear()
    qtbot.waitUntil(lambda: _loose(window) == ["about apples"], timeout=5000)

    # Deleted, keeping its chats: they come out, every message kept.
    window.projects.ask_delete = lambda project, chats: "keep" if chats == 1 else None
    _menu_action(window, model.project_index(project.id), "Delete project…").trigger()
    assert _headers(window) == [] and sorted(_loose(window)) == ["about apples", "about pears"]
    assert [m.content for m in window.store.messages(pears)][0] == "about pears"
    assert window.sidebar.search.placeholderText() == "Search chats"


def test_export_then_import_a_project_and_a_bad_file_is_one_sentence(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    window.projects.ask_name = lambda title, current="": "Trip"
    project = window.projects.new_project()
    window.projects.new_chat_in(project.id)
    send_and_wait(qtbot, window, "Pack a bag")

    suggestions = []
    window.projects.ask_export_path = lambda suggested: suggestions.append(suggested) or str(tmp_path / "trip")
    with qtbot.waitSignal(window.projects.sig_exported) as blocker:
        _menu_action(window, window.chat_list.project_index(project.id), "Export project…").trigger()
    path = tmp_path / "trip.specchat-project.json"
    assert blocker.args == [str(path)] and suggestions[0].endswith("Trip.specchat-project.json")
    assert json.loads(path.read_text("utf-8"))["chats"][0]["messages"][0]["content"] == "Pack a bag"

    window.projects.ask_import_path = lambda: str(path)
    _menu_action(window, QModelIndex(), "Import project…").trigger()
    assert _headers(window) == ["Trip", "Trip (2)"]
    copy = window.store.projects.list_projects()[1]
    assert _chats_in(window, copy.id) == ["Pack a bag"]

    bad = tmp_path / "notes.specchat-project.json"
    bad.write_text("{not json", "utf-8")
    window.projects.import_project(str(bad))
    message = window.error_banner.text()
    assert window.error_banner.isVisible() and "notes.specchat-project.json" in message and "not JSON" in message
    assert _headers(window) == ["Trip", "Trip (2)"]


def test_deleting_a_project_with_its_chats_and_a_nameless_project_is_one_sentence(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    window.projects.ask_name = lambda title, current="": "Scratch"
    project = window.projects.new_project()
    window.projects.new_chat_in(project.id)
    send_and_wait(qtbot, window, "throwaway question")
    doomed = window.conversation.chat_id
    assert window.store.get_chat(doomed).project_id == project.id

    # Emptying its name in the settings is refused in one sentence; nothing else changes.
    def blank(dialog):
        dialog.name.setText("   ")
        dialog.instructions.setPlainText("kept?")
        dialog.documents.addItem("/tmp/a.md")
        dialog.documents.setCurrentRow(0)
        dialog.remove()
        assert dialog.document_paths() == []
        return True

    window.projects.ask_settings = blank
    window.projects.edit_settings(project.id)
    assert window.error_banner.isVisible() and "needs a name" in window.error_banner.text()
    assert window.store.projects.get_project(project.id).instructions == ""

    # Deleted with its chats: the open one among them, the window moves to a new, empty chat.
    window.projects.ask_delete = lambda project, chats: "delete"
    view = window.sidebar.list_view
    view.setCurrentIndex(window.chat_list.project_index(project.id))
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    assert window.store.get_chat(doomed) is None and window.store.projects.list_projects() == []
    assert window.conversation.chat_id is None and _headers(window) == [] and _loose(window) == []
