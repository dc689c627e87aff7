"""Choosing models: the library of GGUF files, the model bar and the session that loads the chosen pair.

- library_controller.py: The library controller: folder scans, the model folders, the Library and Get-models windows, and the pair a
- library_dialog.py: The model library window: every .gguf file found, its facts, and why a file cannot be used.
- library_model.py: Item models over the model library: every file (the target picker and the library table), and the drafts that
- library_worker.py: The library thread: scans model folders and checks draft compatibility off the GUI thread (through Background).
- model_actions.py: What the Model library does with one file: load it, edit its own settings, forget it, delete it.
- model_bar.py: The model bar above the conversation: target picker, draft picker, the Speculative switch and the load state.
- model_settings_dialog.py: One model file's own settings (context, GPU layers, thinking, load settings, projector), with its memory.
- model_thinking.py: A model's thinking as the chat settings see it: its template's switches, and its markers remembered per file.
- model_session.py: The model session: which target and draft are chosen, loading them in the engine process, and readiness.
- projector_field.py: Model settings' projector row: the mmproj beside the model, or one chosen and checked against it.
- server_models.py: The Model picker's server rows: the models each configured server offers, listed off the GUI thread.
"""
