"""Projects in the window: folders of chats with their own instructions, model, draft, preset and documents.

- controller.py: The project actions of the chat list, a new chat's project, and the instructions in each reply's prompt.
- dialogs.py: A project's settings dialog, and the keep-or-delete-its-chats question its deletion asks.
- documents.py: A project's documents indexed in the background (progress, Cancel), and a question sent with them.
- embedding.py: The embedding model the documents are read with, in a process of its own, and a question's vector.
- question_sources.py: What a question is sent with (its documents whole, or its passages), found off the GUI thread.
- source_dialog.py: A cited source shown in its document, the passage highlighted and scrolled to.
"""
