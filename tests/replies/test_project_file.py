"""A project as one file: exported with its chats' messages, imported as a new project; bad files get one sentence
and leave nothing behind."""

from __future__ import annotations

import json

import pytest

from app.replies.project_file import ProjectFileError, import_project, write_project
from app.store import ChatSettings, ChatStore
from app.store.attachments import Attachment
from app.store.projects.sources import Source

SOURCE = Source(1, "/notes/roses.md", 10, 40, 0.03, "Prune roses in March.", heading="Pruning", page=2)


def test_export_then_import_keeps_the_project_and_its_chats(tmp_path):
    with ChatStore(tmp_path / "c.sqlite3") as store:
        project = store.projects.create_project(
            "Garden", instructions="You know plants.", target_path="/m/t.gguf", documents=["/notes"]
        )
        chat = store.create_chat("Roses", ChatSettings(temperature=0.4))
        store.projects.move_chat(chat.id, project.id)
        store.add_message(
            chat.id, "user", "When to prune?", attachments=[Attachment("a.txt", "notes")], sources=(SOURCE,)
        )
        store.add_message(chat.id, "assistant", "In March.", tokens=[("In", "target"), (" March.", "draft")])
        store.create_chat("Loose chat")  # not in the project: not exported

        path = write_project(store, project.id, tmp_path / "garden")
        assert path.name == "garden.specchat-project.json"
        document = json.loads(path.read_text("utf-8"))
        assert [c["chat"]["title"] for c in document["chats"]] == ["Roses"]

        imported = import_project(store, path)
        assert imported.name == "Garden (2)" and imported.instructions == "You know plants."
        assert imported.target_path == "/m/t.gguf" and imported.documents == ("/notes",)
        (chat_id,) = store.projects.chat_ids(imported.id)
        copy = store.get_chat(chat_id)
        assert copy.title == "Roses" and copy.settings.temperature == 0.4
        messages = store.messages(chat_id)
        assert [m.content for m in messages] == ["When to prune?", "In March."]
        assert messages[0].attachments == (Attachment("a.txt", "notes"),)
        assert messages[0].sources == (SOURCE,)  # the passages the question was sent with come along
        assert messages[1].tokens == [("In", "target"), (" March.", "draft")]


@pytest.mark.parametrize(
    "content, words",
    [
        (b"\x00\x01 not text", "not JSON"),
        (b'{"chat": {}}', "not a SpecChat project file"),
        (b'{"kind": "specchat-project", "format": 99, "project": {}, "chats": []}', "newer SpecChat"),
        (b'{"kind": "specchat-project", "format": 1, "project": {"name": "X"}, "chats": [{"chat": 3}]}', "damaged"),
    ],
)
def test_bad_files_get_one_sentence_and_leave_nothing(tmp_path, content, words):
    path = tmp_path / "bad.specchat-project.json"
    path.write_bytes(content)
    with ChatStore(tmp_path / "c.sqlite3") as store:
        with pytest.raises(ProjectFileError, match=words) as caught:
            import_project(store, path)
        assert "bad.specchat-project.json" in str(caught.value) and "\n" not in str(caught.value)
        assert store.projects.list_projects() == [] and store.list_chats() == []
