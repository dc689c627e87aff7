"""Pictures in prompts: a vision model's projector (its mmproj file) through llama.cpp's mtmd.

- projector.py: The projector, and prompts with pictures in them (placeholders keyed by each picture's bytes).
- seeing.py: The loaded target's projector and its last prompt with pictures, for the engine.
"""
