"""The window's frame: start-up, the main window that lays out and wires the features, and its small parts.

- app_settings.py: The app's settings as the window applies them: what models load with, the Settings dialog, what a change does, view options.
- appearance.py: The window's appearance: System (follows the OS colour scheme), Light or Dark, switched live.
- empty_state.py: The first-run page: shown instead of an empty conversation while the library has no usable model.
- keyboard.py: The window's keys: its shortcuts as actions, F1 and Ctrl+/ for the sheet, and Esc wherever the focus is.
- main.py: `specchat`: start the window.
- message_commands.py: Regenerate, Continue, Edit and Copy of a message (MessageCommands, owned by the window).
- main_window.py: The main window: sidebar of chats, model bar, transcript and composer, wired together.
- qt_check.py: A check for a PySide6 build that would crash the app: shiboken6 6.12.0 on Python < 3.12 returns None and True
- sending.py: What happens when the person presses Send: the checks that can refuse it, the request it asks with.
- shortcuts_sheet.py: The keyboard shortcuts sheet, read from the window's own actions so it never falls behind them.
- single_instance.py: One SpecChat window per chat database: a second launch hands over to the running one and exits.
- store_check.py: Reading the chat database for damage after the window shows, so a large history never delays the start.
- versions.py: The switcher between a regenerated or edited message's versions, and a regenerated reply's fresh seed.
- window_geometry.py: The main window's size, position and sidebar width, kept between runs. GUI thread only.
- window_widgets.py: Small widgets of the main window: the error banner, the legend row above the composer and the status footer.
"""
