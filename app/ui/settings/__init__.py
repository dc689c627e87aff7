"""The settings dialogs: per-chat generation settings and the app's settings, as pages that fit a laptop screen.

- api_server_page.py: The API server's settings: on or off, where it listens, its key, and what it is doing. GUI thread only.
- chat_dialog.py: The chat's generation settings: system prompt, sampling, reply length, drafting and thinking. GUI thread only.
- chat_presets.py: A chat's preset in the window: offered by the chat settings, shown on the switches once chosen.
- dialog.py: The app's settings dialog, a page each: model folders, loading and devices, presets, servers, the API, tools, documents, appearance, history.
- documents_page.py: Settings > Documents: the embedding model a project's documents are read with, or None (words only).
- load_form.py: The load settings' fields (batch, flash attention, KV cache, mmap, mlock), their memory and refusals.
- pages.py: Settings as pages: a list of page names beside the page shown, each page scrolling on its own.
- presets_page.py: Settings > Presets: add, rename, duplicate and delete named presets; the built-in Default stays.
- thinking_group.py: The chat settings' "Thinking" group: thinking on or off, its effort and budget, and the model's markers.
- requests_field.py: Settings' "Requests at once" on the Loading page: the count, and the context each chat really gets.
- remote_settings.py: Settings for models elsewhere: OpenAI-compatible servers (URL and optional API key) and llama.cpp RPC workers.
"""
