"""Errors the engine raises, each with a message a person can act on."""

from __future__ import annotations


class EngineError(Exception):
    """Base for every error the engine reports to a front end."""


class ModelFileError(EngineError):
    """A model file is missing, unreadable, truncated or not a usable GGUF."""


class ModelLoadError(EngineError):
    """llama.cpp refused to load a model (out of memory, unsupported architecture, ...)."""


class BuildFaultError(EngineError):
    """This llama.cpp build cannot run on this machine's CPU (SIGILL): no model file is to blame."""


class IncompatiblePairError(EngineError):
    """The draft model cannot speculate for the target (different vocabularies)."""


class PromptFormatError(EngineError):
    """The conversation cannot be turned into a prompt at all (even as ChatML): the request's fault."""


class PromptTooLongError(EngineError):
    """The prompt alone does not fit in the context window."""

    def __init__(self, n_prompt: int, n_ctx: int):
        super().__init__(
            f"The conversation needs {n_prompt} tokens but the context holds {n_ctx}. "
            "Start a new chat, shorten the message, or raise the context size in Settings."
        )
        self.n_prompt = n_prompt
        self.n_ctx = n_ctx


class GrammarError(EngineError):
    """A JSON schema (or grammar) that a reply cannot be decoded under: the request's fault, not the model's."""
