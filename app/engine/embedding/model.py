"""A GGUF embedding model (or reranker) loaded through llama-cpp-python's low-level API: texts in, vectors out.

The low-level API rather than `llama_cpp.Llama.embed`: that one cuts a long text at the batch size (dropping the
closing [SEP] a BERT model was trained to see) without saying so, and normalises a reranker's single score to +-1.
Here each text is cut to the model's context keeping its closing special token, the cut is counted, texts are packed
into batches of up to MAX_SEQUENCES sequences, and a reranker's score comes back as it is.

Rows are L2-normalised float32, so a dot product is the cosine similarity. Only one thread may call an Embedder.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol, Sequence, Union

import numpy as np

from app.engine.errors import ModelFileError, ModelLoadError
from app.engine.gguf.info import inspect_gguf
from app.engine.gguf.kind import POOLING_MEAN, POOLING_NONE, POOLING_RANK, ModelKind, pooling_type
from app.engine.local.llama_loading import forget_log, install_log_capture, recent_errors

MAX_SEQUENCES = 16  # texts read in one pass at most
# The longest text read whole: a text is one pass, and an encoder's attention buffer grows with the square of its
# length (12 heads at 8,192 tokens would take 3 GB); passages for search are shorter. Longer texts are cut here.
MAX_CONTEXT = 2048

EmbeddingInput = Union[str, Sequence[int]]  # a text, or token ids as a client tokenized it


@dataclass(frozen=True)
class Embeddings:
    """What one call read: a row per input, the tokens it read and the tokens cut off inputs too long for it."""

    vectors: np.ndarray  # (n, dim) float32, rows of length 1; a reranker's (n, 1) raw scores
    tokens: int  # tokens read, special tokens included (OpenAI's usage.prompt_tokens)
    cut: tuple[int, ...]  # per input, the tokens cut off its end (0 for one that fit)


class TextEmbedder(Protocol):
    """What a document index needs of an embedding model: Embedder (in this process) and EmbeddingWorker (in the
    embedding process) both are one."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised rows; a text too long for the model is read up to its context."""
        ...


def embedding_threads() -> int:
    """The threads an embedding model reads with by default: half the cores, the other half left to the chat model
    that runs beside it (on a busy machine more threads than free cores make llama.cpp far slower, not faster)."""
    return max(1, (os.cpu_count() or 2) // 2)


def not_embedding_sentence(path: Path) -> str:
    return (
        f"{path.name} is a chat model, not an embedding model: --embedding takes a model such as "
        "nomic-embed-text or bge-small (Get models offers one)."
    )


class Embedder:
    """One embedding model or reranker and its context. `kind` says which; `dim` is a row's length."""

    def __init__(self, path: Union[str, os.PathLike], *, n_threads: Optional[int] = None, n_gpu_layers: int = 0):
        """Load `path`. Raises ModelFileError (missing, damaged, or a chat model) or ModelLoadError (llama.cpp
        refused it), each with one sentence."""
        import llama_cpp

        self.path = Path(path)
        if not self.path.is_file():
            raise ModelFileError(f"There is no model file at {self.path}.")
        info = inspect_gguf(self.path)  # raises ModelFileError for what is not a GGUF model
        if not info.usable:
            raise ModelFileError(f"{self.path.name} cannot be loaded: {info.problem}.")
        if info.kind == "chat":
            raise ModelFileError(not_embedding_sentence(self.path))
        self.kind: ModelKind = info.kind
        self.name = info.name
        install_log_capture()
        self._llama = llama_cpp
        mparams = llama_cpp.llama_model_default_params()
        mparams.n_gpu_layers = n_gpu_layers
        forget_log()
        self._model = llama_cpp.llama_model_load_from_file(str(self.path).encode("utf-8"), mparams)
        if not self._model:
            raise ModelLoadError(f"llama.cpp could not load {self.path.name}: {recent_errors() or 'no details'}.")
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self._vocab)
        trained = llama_cpp.llama_model_n_ctx_train(self._model)
        # A text is read in one pass (an encoder attends both ways, so it cannot be split): the batch holds the
        # longest text the model reads.
        self.n_ctx = min(trained if trained > 0 else 512, MAX_CONTEXT)
        pooling = pooling_type(info.metadata)
        cparams = llama_cpp.llama_context_default_params()
        cparams.embeddings = True
        cparams.pooling_type = (
            POOLING_RANK if self.kind == "reranker" else POOLING_MEAN if pooling in (None, POOLING_NONE) else pooling
        )
        # Every pass starts from an empty cache and reads at most n_ctx tokens in all: one shared cache of n_ctx.
        cparams.n_ctx = self.n_ctx
        cparams.n_batch = cparams.n_ubatch = self.n_ctx
        cparams.n_seq_max = MAX_SEQUENCES
        cparams.kv_unified = True
        threads = n_threads or embedding_threads()
        cparams.n_threads = cparams.n_threads_batch = threads
        cparams.no_perf = True
        self._ctx = llama_cpp.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            llama_cpp.llama_model_free(self._model)
            self._model = None
            raise ModelLoadError(f"llama.cpp could not create a context for {self.path.name}: {recent_errors()}.")
        self._encoder_only = not llama_cpp.llama_model_has_decoder(self._model)
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self._batch = llama_cpp.llama_batch_init(self.n_ctx, 0, 1)
        out = llama_cpp.llama_model_n_cls_out(self._model) if self.kind == "reranker" else 0
        self.dim = int(out or llama_cpp.llama_model_n_embd(self._model))
        self._bos = llama_cpp.llama_vocab_bos(self._vocab)
        self._eos = llama_cpp.llama_vocab_eos(self._vocab)
        self._sep = llama_cpp.llama_vocab_sep(self._vocab)

    # -- the documents' protocol ----------------------------------------------------------------------------------

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, L2-normalised rows; a text too long for the model is read up to its context."""
        return self.embeddings(texts).vectors

    # -- counted ------------------------------------------------------------------------------------------------

    def tokenize(self, text: str) -> list[int]:
        """The text's tokens with the model's special tokens ([CLS] ... [SEP] for BERT)."""
        data = text.encode("utf-8")
        capacity = len(data) + 16
        buf = (self._llama.llama_token * capacity)()
        n = self._llama.llama_tokenize(self._vocab, data, len(data), buf, capacity, True, False)
        return list(buf[: max(n, 0)])

    def embeddings(self, inputs: Sequence[EmbeddingInput], truncate: bool = True) -> Embeddings:
        """Vectors for texts or token lists, with the tokens read and cut. Raises ValueError (one sentence) for a
        token id outside the vocabulary, an empty input, or (without `truncate`) an input too long for the model."""
        token_lists = [self.tokenize(item) if isinstance(item, str) else self._checked_ids(item) for item in inputs]
        if not truncate:
            for index, tokens in enumerate(token_lists):
                if len(tokens) > self.n_ctx:
                    raise ValueError(
                        f"Input {index} has {len(tokens)} tokens, more than the {self.n_ctx} the model reads at once."
                    )
        return self._read(token_lists, normalise=self.kind != "reranker")

    def rank(self, query: str, documents: Sequence[str]) -> Embeddings:
        """A reranker's relevance score per document for `query` (higher is more relevant), as a (n, 1) array."""
        if self.kind != "reranker":
            raise ValueError(f"{self.path.name} is an embedding model, not a reranker: it cannot rank documents.")
        question = self._plain_tokens(query)
        pairs = []
        for document in documents:
            # llama-server's pair without a template: BOS query EOS SEP document EOS (BERT has no EOS: SEP).
            closing = [self._eos] if self._eos >= 0 else []
            pairs.append(
                [self._bos] + question + closing + [self._sep] + self._plain_tokens(document) + (closing or [self._sep])
            )
        return self._read(pairs, normalise=False)

    def close(self) -> None:
        if self._model is None:
            return
        self._llama.llama_batch_free(self._batch)
        self._llama.llama_free(self._ctx)
        self._llama.llama_model_free(self._model)
        self._model = None

    # -- inside ---------------------------------------------------------------------------------------------------

    def _plain_tokens(self, text: str) -> list[int]:
        data = text.encode("utf-8")
        capacity = len(data) + 16
        buf = (self._llama.llama_token * capacity)()
        n = self._llama.llama_tokenize(self._vocab, data, len(data), buf, capacity, False, False)
        return list(buf[: max(n, 0)])

    def _checked_ids(self, ids: Sequence[int]) -> list[int]:
        for token in ids:
            if not 0 <= token < self.n_vocab:
                raise ValueError(f"Token id {token} is not in the model's vocabulary (0 to {self.n_vocab - 1}).")
        return list(ids)

    def _fitted(self, tokens: list[int]) -> tuple[list[int], int]:
        """`tokens` cut to the context, keeping a closing special token; and how many were cut."""
        if not tokens:
            raise ValueError("An input is empty: there is nothing to embed.")
        if len(tokens) <= self.n_ctx:
            return tokens, 0
        closing = tokens[-1] if tokens[-1] in (self._sep, self._eos) and tokens[-1] >= 0 else None
        kept = tokens[: self.n_ctx - 1] + [closing] if closing is not None else tokens[: self.n_ctx]
        return kept, len(tokens) - len(kept)

    def _read(self, token_lists: list[list[int]], normalise: bool) -> Embeddings:
        fitted = [self._fitted(tokens) for tokens in token_lists]
        vectors = np.zeros((len(fitted), self.dim), dtype=np.float32)
        start = 0
        while start < len(fitted):
            end, used = start, 0
            while end < len(fitted) and end - start < MAX_SEQUENCES and used + len(fitted[end][0]) <= self.n_ctx:
                used += len(fitted[end][0])
                end += 1
            vectors[start:end] = self._pass([tokens for tokens, _ in fitted[start:end]])
            start = end
        if normalise:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return Embeddings(vectors, sum(len(t) for t, _ in fitted), tuple(cut for _, cut in fitted))

    def _pass(self, sequences: list[list[int]]) -> np.ndarray:
        """One forward pass over up to MAX_SEQUENCES sequences that fit the batch together: a pooled row each."""
        llama, batch = self._llama, self._batch
        llama.llama_memory_clear(self._memory, True)
        n = 0
        for seq, tokens in enumerate(sequences):
            for pos, token in enumerate(tokens):
                batch.token[n], batch.pos[n], batch.n_seq_id[n] = token, pos, 1
                batch.seq_id[n][0] = seq
                batch.logits[n] = True
                n += 1
        batch.n_tokens = n
        status = (llama.llama_encode if self._encoder_only else llama.llama_decode)(self._ctx, batch)
        if status != 0:
            raise ModelLoadError(f"llama.cpp could not read the texts (status {status}): {recent_errors()}.")
        rows = np.empty((len(sequences), self.dim), dtype=np.float32)
        for seq in range(len(sequences)):
            pointer = llama.llama_get_embeddings_seq(self._ctx, seq)
            if not pointer:
                raise ModelLoadError(f"llama.cpp gave no vector for {self.path.name}: {recent_errors()}.")
            rows[seq] = np.ctypeslib.as_array(ctypes.cast(pointer, ctypes.POINTER(ctypes.c_float)), (self.dim,))
        return rows
