"""The Qt window. The only package that imports PySide6.

- shell/: start-up and the main window, which lays out and wires the features.
- chat/: the sidebar, the composer, sending and streaming replies, per-reply actions.
- projects/: projects in the chat list: their actions, settings dialog, and instructions in each reply.
- attachments/: files and pictures waiting to be sent with the next message, and their size in tokens.
- transcript/: the document replies stream into, with highlights, Markdown, tooltips and links.
- models/: the library, the model bar and the model session.
- get_models/: curated pairs and Hugging Face downloads.
- inspector/: the per-reply charts window.
- settings/: the settings dialogs.
- engine_link/: the handle on the engine process.
- widgets/: small widgets, layout helpers and the style.
- devtools/: the GUI benchmark and the screenshot script (not part of the window).
"""
