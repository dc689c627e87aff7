"""A vision model's projector (its mmproj file) through llama.cpp's mtmd, and prompts with pictures in them.

A prompt with pictures is a list of token ids like any other, so the decoding loop, the drafters and the KV cache's
mirror (LoadedModel.cached) work on it unchanged: each picture's positions hold placeholder ids, negative (no token
has one) and made from the SHA-256 of the picture's bytes, so a prompt with another picture never matches the cache
of this one, and the same picture in the next turn does. MediaPrompt.read evaluates what the cache does not hold:
text through LoadedModel.decode, pictures through mtmd (encode, then decode their embeddings into the target).

A picture's encoding (the projector's vision tower: seconds on a CPU) runs on the projector's own thread, so a batch
steps its other requests while it runs (MediaPrompt.start_encoding, encoded); decoding the embeddings it made into
the target is one pass in the step, as a prompt chunk is. One encoding at a time: mtmd keeps its output in one
buffer, copied out before the next encoding starts.

Only the engine process's main thread may use these, but for the encoding thread inside Projector.
"""

from __future__ import annotations

import ctypes
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from app.common.bounded_read import file_problem
from app.engine.errors import ModelLoadError, PromptFormatError
from app.engine.image_files import IMAGE_MARKER, ImageInput, check_picture
from app.engine.local.llama_loading import log_callback, recent_errors
from app.engine.local.llama_model import LoadedModel
from app.engine.local.prompt_tokens import tokenize_prompt


def is_placeholder(token: int) -> bool:
    return token < 0


def text_only(tokens: Sequence[int]) -> list[int]:
    """`tokens` without the pictures' placeholders: what a draft model, which cannot see, reads."""
    return [t for t in tokens if t >= 0]


def before_placeholder(tokens: list[int]) -> list[int]:
    """`tokens` up to the first placeholder: a drafter that copies text never proposes a picture's position."""
    for i, token in enumerate(tokens):
        if token < 0:
            return tokens[:i]
    return tokens


@dataclass
class _Picture:
    start: int  # index of its first position in the prompt's tokens
    n_tokens: int
    chunk: int  # an mtmd_input_chunk pointer the prompt owns


@dataclass
class MediaPrompt:
    """A prompt's tokens (placeholders where pictures stand) and its pictures' chunks. It owns the chunks from
    `pictures[owned_from]` on; those before are its `base`'s (the conversation so far), which it keeps alive."""

    tokens: list[int]
    pictures: list[_Picture] = field(default_factory=list)
    _projector: Optional["Projector"] = None
    base: Optional["MediaPrompt"] = None
    owned_from: int = 0
    digests: list[str] = field(default_factory=list)  # its pictures' SHA-256, in order
    # Encodings under way or done and not yet read, by the picture's start: a prompt waits for its own before its
    # chunks are freed, so the encoding thread never reads a freed chunk.
    _encodings: dict[int, Future] = field(default_factory=dict)

    def read(self, target: LoadedModel, cancel=None) -> tuple[int, bool]:
        """Bring the target's cache to all of the prompt but its last token. Returns (tokens the cache already
        held, False when cancelled). A cache that ends inside a picture is cut back to the picture's start: a
        picture is evaluated whole."""
        tokens = self.tokens
        reused = self.start_of_picture_around(target.keep_common_prefix(tokens, leave=1))
        target.truncate(reused)  # nothing to cut unless the kept text ended inside a picture
        cursor = reused
        end = len(tokens) - 1
        for picture in self.pictures:
            if picture.start + picture.n_tokens <= cursor:
                continue
            if not target.decode(tokens[cursor : picture.start], cancel=cancel):
                return reused, False
            if cancel is not None and cancel.is_set():
                return reused, False
            assert self._projector is not None
            self._projector.evaluate(target, picture, tokens[picture.start : picture.start + picture.n_tokens])
            cursor = picture.start + picture.n_tokens
        return reused, target.decode(tokens[cursor:end], cancel=cancel)

    def picture_at(self, start: int) -> Optional[_Picture]:
        """The picture whose first position is `start`, if one is."""
        return next((p for p in self.pictures if p.start == start), None)

    def start_of_picture_around(self, n: int) -> int:
        """`n`, or the start of the picture that position n falls inside: a picture is read whole."""
        return next((p.start for p in self.pictures if p.start < n < p.start + p.n_tokens), n)

    def evaluate_into(self, target: LoadedModel, picture: _Picture, seq: int, n_past: int) -> None:
        """Read `picture` into a batch's sequence (Projector.evaluate_into)."""
        assert self._projector is not None
        self._projector.evaluate_into(target, picture, seq, n_past)

    def start_encoding(self, picture: _Picture) -> None:
        """Begin encoding `picture` on the projector's thread, unless it has begun."""
        assert self._projector is not None
        if picture.start not in self._encodings:
            self._encodings[picture.start] = self._projector.encode(picture)

    def encoded(self, picture: _Picture) -> bool:
        """Whether `picture`'s encoding (started) has ended, well or not."""
        encoding = self._encodings.get(picture.start)
        return encoding is not None and encoding.done()

    def wait_for_encoding(self) -> None:
        """Block until an encoding of this prompt under way ends (a batch with nothing else to do)."""
        for encoding in self._encodings.values():
            if not encoding.done():
                encoding.exception()  # waits; what it raised is raised by decode_encoded
                return

    def decode_encoded(self, target: LoadedModel, picture: _Picture, seq: int, n_past: int) -> None:
        """Decode `picture`'s embeddings, encoded (see `encoded`), into sequence `seq` at `n_past`. Raises
        ModelLoadError (the encoding's or the decoding's), the sequence left holding its first n_past positions."""
        assert self._projector is not None
        embeddings = self._encodings.pop(picture.start).result()
        self._projector.decode_into(target, picture, embeddings, seq, n_past)

    def close(self) -> None:
        encodings, self._encodings = self._encodings, {}
        for encoding in encodings.values():
            encoding.exception()  # the thread may still read a chunk freed below
        if self._projector is not None:
            for picture in self.pictures[self.owned_from :]:
                self._projector.mtmd.mtmd_input_chunk_free(picture.chunk)
        self.pictures = []
        self.base = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class Projector:
    """An mmproj file loaded for one target (mtmd's context). Raises ModelLoadError, with llama.cpp's reason, for
    a file that is no projector or one made for another model (its embedding size differs)."""

    def __init__(self, path: str | Path, target: LoadedModel, n_threads: int):
        try:
            from llama_cpp import mtmd_cpp
        except (ImportError, OSError):  # a build of llama-cpp-python without its multimodal library
            raise ModelLoadError(
                "This llama.cpp build has no multimodal library (libmtmd), so no model can see pictures with it."
            ) from None

        self.mtmd = mtmd_cpp
        self.path = Path(path)
        self.target = target
        problem = file_problem(self.path)
        if problem is not None:
            raise ModelLoadError(f"The projector file {problem}.")
        # mtmd logs apart from llama.cpp: into the same capture, so its reasons reach our error messages.
        mtmd_cpp.mtmd_log_set(log_callback(), ctypes.c_void_p(0))
        mtmd_cpp.mtmd_helper_log_set(log_callback(), ctypes.c_void_p(0))
        params = mtmd_cpp.mtmd_context_params_default()
        params.use_gpu = target.n_gpu_layers != 0
        params.print_timings = False
        params.n_threads = n_threads
        params.warmup = False
        self._ctx = mtmd_cpp.mtmd_init_from_file(str(self.path).encode("utf-8"), target._model, params)
        if not self._ctx:
            said = " ".join(recent_errors().split())  # one line: mtmd's reason and its hint
            raise ModelLoadError(
                f"llama.cpp could not load {self.path.name} as a projector for {target.path.name}: "
                f"{said or 'is it the mmproj made for this model?'}"
            )
        if not mtmd_cpp.mtmd_support_vision(self._ctx):
            self.close()
            raise ModelLoadError(f"{self.path.name} is a projector for sound, not pictures.")
        if mtmd_cpp.mtmd_decode_use_mrope(self._ctx):
            self.close()
            raise ModelLoadError(
                f"{self.path.name} places pictures in two dimensions (M-RoPE, as Qwen2-VL and "
                "Qwen2.5-VL do), which SpecChat does not support yet."
            )
        self._marker = (mtmd_cpp.mtmd_get_marker(self._ctx) or mtmd_cpp.mtmd_default_marker()).decode()
        self._n_embd = target._llama.llama_model_n_embd_inp(target._model)
        self._encoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="picture-encoding")

    def prompt(
        self,
        text: str,
        markup: Sequence[tuple[int, int]],
        images: Sequence[ImageInput],
        known: Optional[tuple[int, list[int], "MediaPrompt"]] = None,
    ) -> MediaPrompt:
        """The tokens of a chat prompt whose text holds IMAGE_MARKER where each of `images` stands. The text between
        pictures is tokenized as every chat prompt is (control tokens only in the template's markup). `known`:
        (characters, their tokens, the prompt they hold the pictures of) of what the prompt goes on from (the
        last turn and its reply, as generated), reused as they are; `images` are the pictures after it."""
        target = self.target
        offset = known[0] if known is not None else 0
        pieces = text[offset:].split(IMAGE_MARKER)
        if len(pieces) != len(images) + 1:
            raise PromptFormatError(
                "The chat template lost or repeated a picture; this model's template cannot format pictures."
            )
        if known is not None:
            base = known[2]
            result = MediaPrompt(
                tokens=list(known[1]),
                pictures=list(base.pictures),
                _projector=self,
                base=base,
                owned_from=len(base.pictures),
                digests=list(base.digests),
            )
        else:
            result = MediaPrompt(tokens=[], _projector=self)
        for i, piece in enumerate(pieces):
            end = offset + len(piece)
            spans = [(a, min(b, end)) for a, b in markup if a < end]
            result.tokens += tokenize_prompt(target, text[:end], spans, start=offset, add_bos=offset == 0)
            offset = end + len(IMAGE_MARKER)
            if i < len(images):
                self._add_picture(result, images[i])
        if result.tokens and is_placeholder(result.tokens[-1]):  # decoding goes on from the prompt's last token
            raise PromptFormatError("The prompt ends with a picture; a chat template writes text after it.")
        return result

    def picture_tokens(self, image: ImageInput) -> int:
        """How many tokens `image` takes in a prompt, as mtmd tokenizes it: its own and any text around it (Gemma 3's
        begin and end of image). Raises PromptFormatError for a picture that cannot be read."""
        alone = MediaPrompt(tokens=[], _projector=self)
        try:
            self._add_picture(alone, image)
            return len(alone.tokens)
        finally:
            alone.close()

    def _add_picture(self, result: MediaPrompt, image: ImageInput) -> None:
        mtmd = self.mtmd
        check_picture(image.data, image.name)
        result.digests.append(image.digest)
        buf = (ctypes.c_uint8 * len(image.data)).from_buffer_copy(image.data)
        bitmap = mtmd.mtmd_helper_bitmap_init_from_buf(self._ctx, buf, len(image.data), False)
        if not bitmap:
            raise PromptFormatError(f"{image.name} is a damaged or cut-short picture.")
        chunks = mtmd.mtmd_input_chunks_init()
        try:
            mtmd.mtmd_bitmap_set_id(bitmap, image.digest.encode())
            words = mtmd.mtmd_input_text(
                text=self._marker.encode(), text_len=len(self._marker.encode()), add_special=False, parse_special=True
            )
            bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
            if mtmd.mtmd_tokenize(self._ctx, chunks, ctypes.byref(words), bitmaps, 1) != 0:
                raise PromptFormatError(f"{image.name} could not be prepared for this model's projector.")
            # A picture may come with text around it (Gemma 3's <start_of_image>): those are ordinary tokens.
            for k in range(mtmd.mtmd_input_chunks_size(chunks)):
                chunk = mtmd.mtmd_input_chunks_get(chunks, k)
                if mtmd.mtmd_input_chunk_get_type(chunk) == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                    n = ctypes.c_size_t()
                    ptr = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                    result.tokens += [ptr[j] for j in range(n.value)]
                    continue
                n_tokens = mtmd.mtmd_input_chunk_get_n_tokens(chunk)
                base = -((int(image.digest[:8], 16) + 1) << 16)  # distinct per picture; within it, per position
                result.pictures.append(_Picture(len(result.tokens), n_tokens, mtmd.mtmd_input_chunk_copy(chunk)))
                result.tokens += [base - j - 1 for j in range(n_tokens)]
        finally:
            mtmd.mtmd_input_chunks_free(chunks)
            mtmd.mtmd_bitmap_free(bitmap)

    def evaluate(self, target: LoadedModel, picture: _Picture, placeholders: Sequence[int]) -> None:
        """Encode one picture and decode its embeddings into the target's cache after what it holds; the cache's
        mirror gets the picture's `placeholders`."""
        n_past = len(target.cached)
        try:
            self.evaluate_into(target, picture, 0, n_past)
        except ModelLoadError:
            target.truncate(n_past)
            raise
        target.cached.extend(placeholders)

    def evaluate_into(self, target: LoadedModel, picture: _Picture, seq: int, n_past: int) -> None:
        """Encode one picture and decode its embeddings into sequence `seq` of the target's context at `n_past` (a
        batch's sequence; the caller keeps that sequence's mirror). Raises ModelLoadError, the sequence left holding
        only its first n_past positions."""
        self.decode_into(target, picture, self.encode(picture).result(), seq, n_past)

    def encode(self, picture: _Picture) -> Future:
        """Encode `picture` on the projector's thread: a future of its embeddings (a ctypes float array), or of
        the ModelLoadError that says why not."""
        return self._encoder.submit(self._encode, picture)

    def _encode(self, picture: _Picture) -> ctypes.Array:
        # The encoding thread: mtmd's context is used here alone while it runs, llama.cpp's not at all.
        mtmd = self.mtmd
        if mtmd.mtmd_encode_chunk(self._ctx, picture.chunk) != 0:
            raise ModelLoadError(f"{self.path.name}: the picture could not be encoded: {recent_errors()}")
        size = picture.n_tokens * self._n_embd
        embeddings = (ctypes.c_float * size)()
        ctypes.memmove(embeddings, mtmd.mtmd_get_output_embd(self._ctx), size * ctypes.sizeof(ctypes.c_float))
        return embeddings

    def decode_into(
        self, target: LoadedModel, picture: _Picture, embeddings: ctypes.Array, seq: int, n_past: int
    ) -> None:
        """Decode a picture's `embeddings` into sequence `seq` of the target at `n_past`. Raises ModelLoadError, the
        sequence left holding only its first n_past positions."""
        new_n_past = ctypes.c_int32(0)
        rc = self.mtmd.mtmd_helper_decode_image_chunk(
            self._ctx,
            target._ctx,
            picture.chunk,
            embeddings,
            n_past,
            seq,
            target.n_batch,
            ctypes.byref(new_n_past),
            self.mtmd.mtmd_helper_post_decode_callback(),  # a null one: no callback after each batch
            None,
        )
        if rc != 0 or new_n_past.value != n_past + picture.n_tokens:
            target.seq_rm(seq, n_past)
            raise ModelLoadError(f"{self.path.name}: the picture could not be evaluated: {recent_errors()}")

    def close(self) -> None:
        encoder = getattr(self, "_encoder", None)
        if encoder is not None:
            encoder.shutdown(wait=True)  # an encoding under way reads the context freed below
        if getattr(self, "_ctx", None):
            self.mtmd.mtmd_free(self._ctx)
            self._ctx = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
