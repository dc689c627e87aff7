"""Projects: folders of chats that share instructions, a default model, draft and preset, and a list of documents.

- records.py: A project as the store hands it out, and the rules for its name and instructions.
- sources.py: The sources a question was sent with (documents whole, or passages numbered), kept with it.
- store.py: The projects in the chat database: made, renamed, changed, deleted, and chats moved in and out.
"""

from __future__ import annotations

from app.store.projects.records import NAME_LENGTH, Project, clean_name, with_instructions
from app.store.projects.store import ProjectStore

__all__ = ["NAME_LENGTH", "Project", "ProjectStore", "clean_name", "with_instructions"]
