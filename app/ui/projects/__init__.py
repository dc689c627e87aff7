"""Projects in the window: folders of chats with their own instructions, model, draft, preset and documents.

- controller.py: The project actions of the chat list, a new chat's project, and the instructions in each reply's prompt.
- dialogs.py: A project's settings dialog, and the keep-or-delete-its-chats question its deletion asks.
"""
