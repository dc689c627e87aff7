"""A loaded tiny model made to write a scripted reply through the real decoding loop: its logits rows are replaced
by one-hot rows for the script's next token at each position, so the decoder, the speculation, the reasoning
splitter and the API's reply shapes all run as they do for a real model, on exactly the tokens a real model of a
family writes (its control tokens among them)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from app.engine.local.llama_model import LoadedModel


def script_replies(model: LoadedModel, reply: Sequence[int], end: int) -> None:
    """From now on, after any prompt, `model` writes `reply`, then `end` (an end-of-generation token). The prompt
    ends where the decoder's reading of it says: at the first row with logits of a decode that begins with prompt
    rows (a reply's first round reads the prompt's rest), else after the last decode without logit rows."""
    decode, prompt_len = model.decode, [0]
    script = list(reply) + [end]

    def scripted_decode(tokens, *, logit_rows=(), cancel=None) -> bool:
        rows = list(logit_rows)
        done = decode(tokens, logit_rows=rows, cancel=cancel)
        if not rows:
            prompt_len[0] = len(model.cached) + 1  # the prompt's last token heads the first verify batch
        elif rows[0] > 0:
            prompt_len[0] = len(model.cached) - len(tokens) + rows[0] + 1  # the first round read the rest
        scripted_decode.batch = len(tokens)  # type: ignore[attr-defined]
        return done

    def scripted_logits(row: int) -> np.ndarray:
        written = len(model.cached) - scripted_decode.batch + row + 1 - prompt_len[0]  # type: ignore[attr-defined]
        out = np.zeros(model.n_vocab, dtype=np.float32)
        out[script[min(written, len(script) - 1)]] = 30.0
        return out

    model.decode = scripted_decode  # type: ignore[method-assign]
    model.logits = scripted_logits  # type: ignore[method-assign]
