"""Images in the chat: the tiny vision model (app.testing.synthetic_vision) held against llama.cpp's llama-mtmd-cli."""
