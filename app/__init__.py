"""SpecChat: a desktop chat app for local GGUF models that shows speculative decoding at work."""

__version__ = "0.1.0"
