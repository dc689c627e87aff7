"""Developer tools that drive the real window: the GUI overhead benchmark and the screenshot script. Not part of the window.

- bench_gui.py: GUI overhead benchmark: the same request decoded by the engine alone and streamed through the real window.
- bench_modes.py: The two modes of the GUI overhead benchmark (app/ui/devtools/bench_gui.py): the engine alone on a thread of its own,
- screenshot.py: Start the real window, stream one reply with a real model pair, and save a screenshot.
"""
