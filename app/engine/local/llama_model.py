"""One GGUF model loaded through llama-cpp-python's low-level API, with a KV cache we keep in step with.

We drive llama.cpp directly (llama_batch + llama_decode + llama_get_logits_ith) instead of `llama_cpp.Llama` because
speculation needs three things `Llama` does not give: logits for only the rows we ask for (its `logits_all` keeps an
n_ctx x n_vocab buffer, ~5 GB at 8k context with a 152k vocab), a batch whose rows we choose, and rolling the KV
cache back to any position after a rejected draft.

Only the engine process's main thread may call a LoadedModel.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

import numpy as np

from app.engine.config import FlashAttn, KvType, load_settings_problem
from app.engine.errors import ModelFileError, ModelLoadError
from app.engine.local.grammar import GrammarMask
from app.engine.speculation.drafters import as_tool_argument
from app.engine.local.llama_loading import context_params, install_log_capture, open_model, recent_errors

PROMPT_CHUNK = 512  # the batch when none is given (tests, tools); the window's Auto is machine_defaults.default_batch
# A stretch of the prompt found again later in the cache is kept (shifted) only from this length on: shorter runs
# could match by chance, and re-reading them costs less than being wrong.
SHIFT_MIN_RUN = 32


class LoadedModel:
    """A model, its context and a mirror of the token ids its KV cache holds (`cached`, positions 0..n-1)."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        n_ctx: int,
        n_threads: int,
        n_gpu_layers: int = 0,
        devices: Optional[Sequence[int]] = None,
        n_batch: int = PROMPT_CHUNK,
        flash_attn: FlashAttn = "auto",
        kv_type: KvType = "f16",
        mmap: bool = True,
        mlock: bool = False,
        n_seq_max: int = 1,
    ):
        """`n_seq_max`: the sequences the context holds side by side (app.engine.local.batch.sequences); they share
        one KV budget of `n_ctx` cells (each sequence's share capped at the trained context), and `cached` mirrors
        sequence 0 only. `devices`: the ggml devices offloaded layers may use (app.engine.placement.rpc); None lets llama.cpp choose.
        `n_batch`: the prompt tokens one pass reads; `flash_attn`, `kv_type` (keys and values alike), `mmap` and
        `mlock` as app.engine.config.LoadSettings describes them."""
        import llama_cpp

        problem = load_settings_problem(flash_attn, kv_type)
        if problem:
            raise ModelLoadError(problem)  # llama.cpp would fail the context with a line in its log instead

        install_log_capture()
        self._llama = llama_cpp
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelFileError(f"{self.path}: file not found")

        self.n_gpu_layers = n_gpu_layers  # as asked of llama.cpp (a build without a GPU backend runs them on the CPU)
        self._model = open_model(
            llama_cpp, str(self.path), n_gpu_layers=n_gpu_layers, devices=devices, mmap=mmap, mlock=mlock
        )
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
        cparams = context_params(
            llama_cpp,
            self._model,
            n_ctx=n_ctx,
            n_seq_max=n_seq_max,
            n_batch=n_batch,
            flash_attn=flash_attn,
            kv_type=kv_type,
            n_threads=n_threads,
        )
        n_batch = cparams.n_batch
        # What this model was loaded with, as asked (the engine's load note says it to the window).
        self.kv_type, self.flash_attn, self.mmap, self.mlock = kv_type, flash_attn, mmap, mlock
        self.n_seq_max, self.n_threads = cparams.n_seq_max, n_threads
        self._ctx = llama_cpp.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            llama_cpp.llama_model_free(self._model)
            self._model = None
            detail = recent_errors() or "not enough memory for the context?"
            raise ModelLoadError(f"llama.cpp could not create a context for {self.path.name}: {detail}")
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self.n_ctx = llama_cpp.llama_n_ctx(self._ctx)
        # llama.cpp caps the batch at the context size asked for, then pads the context itself (ask for 64, get
        # 256 with a batch of 64): a decode larger than the batch aborts the process, so chunk by what it allows.
        self._chunk = min(n_batch, llama_cpp.llama_n_batch(self._ctx))
        self.n_batch = self._chunk
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, 1)
        self.cached: list[int] = []
        self._shiftable: bool | None = None  # whether the KV cache can move positions (RoPE models can)
        self._piece_cache: dict[int, bytes] = {}
        self._piece_buf = ctypes.create_string_buffer(256)

        self.bos_id = llama_cpp.llama_vocab_bos(self._vocab)
        self.eos_id = llama_cpp.llama_vocab_eos(self._vocab)
        self.add_bos = bool(llama_cpp.llama_vocab_get_add_bos(self._vocab))
        self.n_params = int(llama_cpp.llama_model_n_params(self._model))

    # -- vocabulary ---------------------------------------------------------------------------------------------

    def tokenize(self, text: str, *, add_special: bool, parse_special: bool = True) -> list[int]:
        data = text.encode("utf-8")
        capacity = len(data) + 16
        buf = (self._llama.llama_token * capacity)()
        n = self._llama.llama_tokenize(self._vocab, data, len(data), buf, capacity, add_special, parse_special)
        if n < 0:  # cannot happen with one byte per token as the bound, but llama.cpp reports it this way
            capacity = -n
            buf = (self._llama.llama_token * capacity)()
            n = self._llama.llama_tokenize(self._vocab, data, len(data), buf, capacity, add_special, parse_special)
        return list(buf[:n])

    def token_bytes(self, token: int) -> bytes:
        """The bytes a token stands for in output text (special tokens render as nothing)."""
        piece = self._piece_cache.get(token)
        if piece is None:
            n = self._llama.llama_token_to_piece(self._vocab, token, self._piece_buf, 256, 0, False)
            if n < 0:
                big = ctypes.create_string_buffer(-n)
                n = self._llama.llama_token_to_piece(self._vocab, token, big, -n, 0, False)
                piece = big.raw[:n]
            else:
                piece = self._piece_buf.raw[:n]
            self._piece_cache[token] = piece
        return piece

    def token_text(self, token: int) -> str:
        """The token's vocabulary text (for special tokens, their literal name)."""
        raw = self._llama.llama_vocab_get_text(self._vocab, token)
        return raw.decode("utf-8", errors="replace") if raw else ""

    def json_escaped(self, tokens: Sequence[int]) -> list[int]:
        """The token ids of the text of `tokens` as a model copies it into a tool call's arguments (a JSON string,
        line numbers left out: drafters.as_tool_argument); empty when that changes nothing."""
        # A prompt with pictures holds placeholder ids outside the vocabulary (a picture's embeddings): llama.cpp
        # aborts the process on such an id, and a picture has no text to copy anyway.
        text = b"".join(self.token_bytes(t) for t in tokens if 0 <= t < self.n_vocab).decode("utf-8", errors="replace")
        escaped = as_tool_argument(text)
        return self.tokenize(escaped, add_special=False, parse_special=False) if escaped != text else []

    def fim_tokens(self) -> tuple[int, int, int] | None:
        """The fill-in-the-middle markers (prefix, suffix, middle) llama.cpp found in the vocabulary (by the GGUF's
        keys or the tokens' names, e.g. Qwen2.5-Coder's <|fim_prefix|>); None when the model has not all three."""
        llama = self._llama
        found = (
            llama.llama_vocab_fim_pre(self._vocab),
            llama.llama_vocab_fim_suf(self._vocab),
            llama.llama_vocab_fim_mid(self._vocab),
        )
        return found if all(0 <= t < self.n_vocab for t in found) else None

    def is_end_of_generation(self, token: int) -> bool:
        return bool(self._llama.llama_vocab_is_eog(self._vocab, token))

    def is_control(self, token: int) -> bool:
        """A chat-template marker such as <|im_end|>, or a picture's placeholder (app.engine.local.vision.projector): never
        part of the text a reply writes."""
        return token < 0 or bool(self._llama.llama_vocab_is_control(self._vocab, token))

    def control_tokens(self) -> dict[str, int]:
        """Text -> id of every token that `tokenize(parse_special=True)` makes of its literal text (control and
        unknown tokens): chat-template markers such as <|im_start|>, which only a template may write."""
        found = getattr(self, "_control_tokens", None)
        if found is None:
            llama = self._llama
            mask = llama.LLAMA_TOKEN_ATTR_CONTROL | llama.LLAMA_TOKEN_ATTR_UNKNOWN
            found = {}
            for token in range(self.n_vocab):
                if llama.llama_vocab_get_attr(self._vocab, token) & mask:
                    text = self.token_text(token)
                    if text:
                        found.setdefault(text, token)
            self._control_tokens = found
        return found

    def user_defined_tokens(self) -> tuple[str, ...]:
        """Texts of the tokens llama.cpp makes of their literal text even with special parsing off ("user-defined",
        such as Qwen's <tool_call>): a message must not be able to write them."""
        found = getattr(self, "_user_defined", None)
        if found is None:
            llama = self._llama
            found = tuple(
                sorted(
                    {
                        self.token_text(t)
                        for t in range(self.n_vocab)
                        if llama.llama_vocab_get_attr(self._vocab, t) & llama.LLAMA_TOKEN_ATTR_USER_DEFINED
                    }
                    - {""},
                    key=len,
                    reverse=True,
                )
            )
            self._user_defined = found
        return found

    def metadata(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(1 << 16)
        n = self._llama.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        if n < 0:
            return None
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            self._llama.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", errors="replace")

    # -- KV cache -----------------------------------------------------------------------------------------------

    def truncate(self, n_keep: int) -> None:
        """Forget every cached position from `n_keep` on (rollback after a rejected draft, or a changed prompt)."""
        if n_keep >= len(self.cached):
            return
        if not self._llama.llama_memory_seq_rm(self._memory, 0, n_keep, -1):
            # Some memory types can only drop whole sequences; start over rather than compute on a stale cache.
            self._llama.llama_memory_clear(self._memory, True)
            self.cached.clear()
            return
        del self.cached[n_keep:]

    def common_prefix(self, tokens: Sequence[int], end: int | None = None) -> int:
        """How many leading tokens the cache shares with `tokens` (up to `end` of them)."""
        limit = max(0, min(len(self.cached), len(tokens) if end is None else end))
        if self.cached[:limit] == list(tokens[:limit]):  # the usual case, compared at C speed
            return limit
        n = 0
        while self.cached[n] == tokens[n]:
            n += 1
        return n

    def keep_common_prefix(self, tokens: Sequence[int], *, leave: int = 0) -> int:
        """Keep what the cache shares with `tokens` (minus `leave` tokens at the end); return how many it holds.

        That is the common prefix, and also, when `tokens` is the cache with one stretch left out (a chat whose
        oldest turns were dropped to fit the context), the cached text after that stretch: the stretch is
        removed from the cache and the rest shifted down (llama.cpp's context shift), instead of read again.
        """
        n = self.common_prefix(tokens, len(tokens) - leave)
        kept = self.shift_out_gap(0, self.cached, tokens, n, len(tokens) - leave, self.truncate)
        if kept is None:
            self.truncate(n)
            return n
        return kept

    def shift_out_gap(
        self, seq: int, cached: list[int], tokens: Sequence[int], n: int, end: int, truncate: Callable[[int], None]
    ) -> int | None:
        """Where sequence `seq` (its mirror `cached`) holds tokens[:n], then a stretch `tokens` leaves out, then
        more of tokens[n:end]: remove the stretch and shift the rest down over it, and return how many tokens the
        sequence then holds; None (nothing moved, `truncate` may have cut after the shared run) where no such run
        is found or the cache cannot shift. `truncate(k)` cuts the sequence and its mirror to k tokens."""
        resume = _resume_after_gap(cached, tokens, n, end) if self.can_shift() else None
        if resume is None:
            return None
        gap_end, run = resume
        truncate(gap_end + run)
        if not self.shift_out(seq, n, gap_end):
            return None
        del cached[n:gap_end]
        return n + run

    def shift_out(self, seq: int, start: int, end: int) -> bool:
        """Remove sequence `seq`'s positions start..end-1 and move the later ones down over them; False (nothing
        moved) when llama.cpp cannot."""
        llama = self._llama
        if not llama.llama_memory_seq_rm(self._memory, seq, start, end):
            return False
        llama.llama_memory_seq_add(self._memory, seq, end, -1, -(end - start))
        return True

    def can_shift(self) -> bool:
        """Whether the KV cache can move positions (RoPE models can)."""
        if self._shiftable is None:
            self._shiftable = bool(self._llama.llama_memory_can_shift(self._memory))
        return self._shiftable

    def state_bytes(self) -> bytes:
        """A copy of the KV state of what the cache holds (seq 0), for `restore_state` later; b"" when empty."""
        return self.seq_state(0) if self.cached else b""

    def restore_state(self, state: bytes, tokens: Sequence[int]) -> bool:
        """Replace the cache with a state from `state_bytes` that held `tokens`. False (and an empty cache) when
        llama.cpp refuses it: a state of another model or context, or one that does not fit."""
        self.cached = list(tokens) if self.set_seq_state(0, state, len(tokens)) else []
        return bool(self.cached)

    def seq_state(self, seq: int) -> bytes:
        """A copy of sequence `seq`'s KV state (b"" when it holds nothing)."""
        llama = self._llama
        size = llama.llama_state_seq_get_size(self._ctx, seq)
        if not size:
            return b""
        buf = (ctypes.c_uint8 * size)()
        written = llama.llama_state_seq_get_data(self._ctx, buf, size, seq)
        return bytes(memoryview(buf)[:written]) if written else b""

    def set_seq_state(self, seq: int, state: bytes, n_tokens: int) -> bool:
        """Replace sequence `seq` with a state from `seq_state` that held `n_tokens` tokens. False (and the sequence
        empty) when llama.cpp refuses it: a state of another model or context, or one that does not fit. The
        caller keeps the sequence's mirror."""
        llama = self._llama
        llama.llama_memory_seq_rm(self._memory, seq, -1, -1)
        if not state or n_tokens >= self.n_ctx:
            return False
        buf = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if not llama.llama_state_seq_set_data(self._ctx, buf, len(state), seq):
            llama.llama_memory_seq_rm(self._memory, seq, -1, -1)
            return False
        if llama.llama_memory_seq_pos_max(self._memory, seq) != n_tokens - 1:
            llama.llama_memory_seq_rm(self._memory, seq, -1, -1)  # not the state those tokens were kept with
            return False
        return True

    def decode(self, tokens: Sequence[int], *, logit_rows: Iterable[int] = (), cancel=None) -> bool:
        """Append `tokens` to the cache in one forward pass per chunk; logits kept for `logit_rows` (batch indices).

        Returns False if `cancel` was set between chunks (what was decoded so far stays cached and mirrored).
        """
        wanted = set(logit_rows)
        llama = self._llama
        batch = self._batch
        start = 0
        while start < len(tokens):
            if cancel is not None and start and cancel.is_set():
                return False
            chunk = tokens[start : start + self._chunk]
            base = len(self.cached)
            for i, tok in enumerate(chunk):
                batch.token[i] = tok
                batch.pos[i] = base + i
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = 0
                batch.logits[i] = (start + i) in wanted
            batch.n_tokens = len(chunk)
            rc = llama.llama_decode(self._ctx, batch)
            if rc != 0:
                # On failure llama.cpp may keep some ubatches; resync our mirror from what it reports.
                pos_max = llama.llama_memory_seq_pos_max(self._memory, 0)
                del self.cached[pos_max + 1 :]
                self.cached.extend(chunk[: max(0, pos_max + 1 - base)])
                if rc == 1:
                    raise ModelLoadError(f"{self.path.name}: the context is full ({self.n_ctx} tokens)")
                raise ModelLoadError(f"{self.path.name}: llama_decode failed with code {rc}: {recent_errors()}")
            self.cached.extend(chunk)
            self._last_chunk_start = start
            start += len(chunk)
        return True

    def decode_rows(
        self, tokens: Sequence[int], positions: Sequence[int], seqs: Sequence[int], logit_rows: Sequence[bool]
    ) -> None:
        """One forward pass over rows of several sequences (at most n_batch rows): row i puts `tokens[i]` at
        `positions[i]` of sequence `seqs[i]`, with logits when `logit_rows[i]`. `cached` is not touched: the
        caller mirrors each sequence (app.engine.local.batch.sequences). Raises ModelLoadError on failure."""
        llama, batch = self._llama, self._batch
        for i, tok in enumerate(tokens):
            batch.token[i] = tok
            batch.pos[i] = positions[i]
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seqs[i]
            batch.logits[i] = logit_rows[i]
        batch.n_tokens = len(tokens)
        self._last_chunk_start = 0
        rc = llama.llama_decode(self._ctx, batch)
        if rc == 1:
            raise ModelLoadError(f"{self.path.name}: the context is full ({self.n_ctx} tokens)")
        if rc != 0:
            raise ModelLoadError(f"{self.path.name}: llama_decode failed with code {rc}: {recent_errors()}")

    def seq_rm(self, seq: int, start: int) -> bool:
        """Forget sequence `seq`'s positions from `start` on (0: all of it); False when llama.cpp cannot."""
        return bool(self._llama.llama_memory_seq_rm(self._memory, seq, start, -1))

    def seq_pos_max(self, seq: int) -> int:
        """The last position sequence `seq` holds (-1: none)."""
        return int(self._llama.llama_memory_seq_pos_max(self._memory, seq))

    def grammar(self, gbnf: str) -> GrammarMask:
        """A fresh state of `gbnf` over this model's vocabulary. Raises GrammarError."""
        return GrammarMask.compile(self._vocab, self.n_vocab, gbnf)

    def logits(self, row: int) -> np.ndarray:
        """Logits of batch row `row` of the last decode (a view: copy it before the next decode)."""
        ptr = self._llama.llama_get_logits_ith(self._ctx, row - self._last_chunk_start)
        if not ptr:
            raise RuntimeError(f"no logits for row {row}")
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def set_threads(self, n_threads: int) -> None:
        """Run the next forward passes, single tokens and batches alike, on `n_threads` threads (no reload)."""
        if self._ctx:
            self._llama.llama_set_n_threads(self._ctx, n_threads, n_threads)
            self.n_threads = n_threads

    @property
    def kv_values_per_token(self) -> int:
        """Key and value elements one token of context takes in the KV cache, all layers together."""
        llama, model = self._llama, self._model
        head = llama.llama_model_n_embd(model) // max(1, llama.llama_model_n_head(model))
        return llama.llama_model_n_layer(model) * 2 * head * llama.llama_model_n_head_kv(model)

    @property
    def room(self) -> int:
        """Positions left in the context."""
        return self.n_ctx - len(self.cached)

    def close(self) -> None:
        llama = self._llama
        if getattr(self, "_batch", None) is not None:
            llama.llama_batch_free(self._batch)
            self._batch = None
        if getattr(self, "_ctx", None):
            llama.llama_free(self._ctx)
            self._ctx = None
        if getattr(self, "_model", None):
            llama.llama_model_free(self._model)
            self._model = None
        self.cached = []

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def _resume_after_gap(cached: Sequence[int], tokens: Sequence[int], n: int, end: int) -> tuple[int, int] | None:
    """Where `tokens[n:end]` resumes in `cached` after a stretch left out at n, as (cache index, run length), when
    the shared run is long enough to be worth a shift (SHIFT_MIN_RUN); else None."""
    if n >= len(cached) or end - n < SHIFT_MIN_RUN:
        return None
    probe = list(tokens[n : n + SHIFT_MIN_RUN])
    first = probe[0]
    for j in range(n + 1, len(cached) - SHIFT_MIN_RUN + 1):
        if cached[j] != first or list(cached[j : j + SHIFT_MIN_RUN]) != probe:
            continue
        run = SHIFT_MIN_RUN
        while j + run < len(cached) and n + run < end and cached[j + run] == tokens[n + run]:
            run += 1
        return j, run
    return None
