"""Small reusable widgets, layout helpers, the style, and window automation for scripts.

- background.py: Background, the one way to work off the GUI thread: a function on a worker thread, its answer on the GUI thread, stale answers dropped.
- automation.py: Driving the real window from code, for the screenshot script and the self-test (tests use pytest-qt instead).
- dialog_folders.py: Where each file dialog opens: the folder last used for that kind of file, else a sensible one, remembered.
- eye_icon.py: The eye shown beside a model that can see pictures, in the library and the picker.
- elided_label.py: A one-line label that elides its text to the space it gets (the full text is its tooltip).
- link_label.py: A rich-text label whose links follow the theme (laid out again when the palette changes).
- notice_row.py: A notice row: one wrapping sentence and the controls that answer it (the chat header's question, the template choice).
- layouts.py: Small layout helpers shared by the window and its dialogs. GUI thread only.
- style.py: Colours, fonts and the application style sheet, in the current theme: one calm look in one place.
- themes.py: The app's colours as one table keyed by theme (Light, Dark): a new colour is one line in each.
- toggle_switch.py: A small on/off switch (a checkable button painted as a pill), for settings that flip instantly.
"""
