"""Decoding under a grammar: llama.cpp's grammar sampler, through the bindings, as a mask over a row of logits.

A GrammarMask is the grammar's state after the tokens it has accepted. Verifying a draft works on a clone: each
drafted token is judged against the state at its own position (the row's logits masked there), and the target's
token at a refusal is chosen from that masked row, so speculative output under a grammar is exactly what plain
constrained decoding writes. A grammar comes from llama-cpp-python's own JSON-schema converter (or its JSON
grammar for `json_object`), for a schema within app.engine.schema_limits' bounds and checked again as text before
llama.cpp reads it; GBNF it cannot compile is refused with one sentence, before any decoding.
"""

from __future__ import annotations

import ctypes
import json
from typing import Optional

import llama_cpp
import numpy as np
from llama_cpp import llama_grammar

from app.engine.errors import GrammarError
from app.engine.schema_limits import grammar_problem, schema_problem

_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


def schema_grammar(schema: Optional[dict]) -> str:
    """GBNF for JSON that fits `schema` (any JSON object when None), within app.engine.schema_limits' bounds.
    Raises GrammarError."""
    if schema is None:
        return llama_grammar.JSON_GBNF
    problem = schema_problem(schema, "json_schema")
    if problem:
        raise GrammarError(problem)
    try:
        gbnf = llama_grammar.json_schema_to_gbnf(json.dumps(schema))
    except Exception as exc:  # the converter raises bare exceptions for schema features it lacks
        raise GrammarError(f"The JSON schema cannot be turned into a grammar ({str(exc)[:200]}).") from None
    return gbnf


class GrammarMask:
    """One grammar's state over one model's vocabulary. The engine's thread only."""

    def __init__(self, sampler, n_vocab: int):
        self._sampler = sampler
        self._rows = np.zeros(n_vocab, dtype=_TOKEN_DATA)
        self._rows["id"] = np.arange(n_vocab, dtype=np.int32)

    @classmethod
    def compile(cls, vocab, n_vocab: int, gbnf: str) -> "GrammarMask":
        """The grammar `gbnf` compiled, once its text is within app.engine.schema_limits' bounds (llama.cpp's parser
        recurses once per nested group, and a deep enough grammar ends the process). Raises GrammarError."""
        problem = grammar_problem(gbnf)
        if problem:
            raise GrammarError(problem)
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
        if not sampler:
            raise GrammarError("llama.cpp could not read the grammar for this request.")
        return cls(sampler, n_vocab)

    def masked(self, logits: np.ndarray) -> np.ndarray:
        """A copy of `logits` with every token the grammar forbids here at -inf."""
        rows = self._rows
        rows["logit"] = logits
        rows["p"] = 0.0
        data = llama_cpp.llama_token_data_array(
            data=rows.ctypes.data_as(llama_cpp.llama_token_data_p), size=len(rows), selected=-1, sorted=False
        )
        llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(data))
        return rows["logit"].copy()

    def allows(self, token: int) -> bool:
        """Whether the grammar allows `token` here (one token checked, not the vocabulary)."""
        one = np.zeros(1, dtype=_TOKEN_DATA)
        one["id"] = token
        data = llama_cpp.llama_token_data_array(
            data=one.ctypes.data_as(llama_cpp.llama_token_data_p), size=1, selected=-1, sorted=False
        )
        llama_cpp.llama_sampler_apply(self._sampler, ctypes.byref(data))
        return bool(np.isfinite(one["logit"][0]))

    def accept(self, token: int) -> None:
        llama_cpp.llama_sampler_accept(self._sampler, token)

    def clone(self) -> "GrammarMask":
        copy = GrammarMask.__new__(GrammarMask)
        copy._sampler = llama_cpp.llama_sampler_clone(self._sampler)
        copy._rows = self._rows
        return copy

    def close(self) -> None:
        if self._sampler:
            llama_cpp.llama_sampler_free(self._sampler)
            self._sampler = None

    def __del__(self) -> None:
        self.close()
