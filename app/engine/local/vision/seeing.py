"""What the engine needs to answer messages with pictures: the loaded target's projector and the last prompt with
pictures it tokenized (counting a prompt's tokens, fitting it and answering it read the pictures once, not thrice).

Only the engine process's main thread may use it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Sequence

from app.engine.config import GenerationConfig
from app.engine.errors import ModelLoadError, PromptFormatError
from app.engine.gguf.mmproj import mmproj_beside
from app.engine.image_files import ImageInput, with_markers
from app.engine.local.chat_format import RenderedPrompt
from app.engine.local.llama_model import LoadedModel
from app.engine.local.prompts import Prompts
from app.engine.local.vision.projector import MediaPrompt, Projector


class Seeing:
    """The target's projector (None: the model cannot see) and the prompts made with it."""

    def __init__(self) -> None:
        self.projector: Optional[Projector] = None
        self._beside: Optional[Path] = None  # the mmproj offered for the target: loaded at its first picture
        self._unsaid: Optional[ModelLoadError] = None  # why it did not load while counting: said at the next prompt
        self._target: Optional[LoadedModel] = None
        self._last: Optional[tuple[tuple[str, tuple[str, ...]], MediaPrompt]] = None
        self._transcript: Optional[tuple[str, list[int], MediaPrompt]] = None

    @property
    def path(self) -> Optional[Path]:
        return self.projector.path if self.projector is not None else None

    @property
    def offered(self) -> Optional[Path]:
        """The projector the target reads pictures with: loaded, or to be loaded at its first picture (None: none)."""
        return self.path or self._beside

    def offer(self, path: Optional[Path], target: LoadedModel) -> None:
        """The projector for a newly loaded `target` (None: none), the one beside it or the one chosen in its
        settings: loaded when a prompt first holds a picture, so a model that never sees one costs no memory for it."""
        self.close()
        self._beside, self._target = path, target

    def choose(self, path: Optional[Path], target: LoadedModel) -> None:
        """The projector chosen in `target`'s settings (None: the one beside it, if any), offered unless it is the one
        already offered or loaded, which is kept as it is."""
        wanted = path if path is not None else mmproj_beside(target.path)
        if wanted != self.offered:
            self.offer(wanted, target)

    def load(self, path: str | Path | None, target: LoadedModel) -> None:
        """Load (None: unload) the projector for `target`. Raises ModelLoadError for a file that does not fit it."""
        self.close()
        if path is not None:
            self.projector = Projector(path, target, target.n_threads)

    def close(self) -> None:
        # Prompts free their pictures once nothing refers to them (a later turn's prompt refers to its base).
        self._last = self._transcript = None
        if self.projector is not None:
            self.projector.close()
        self.projector = None
        self._beside = self._target = None
        self._unsaid = None

    def picture_tokens(self, image: ImageInput) -> Optional[int]:
        """How many tokens `image` takes with this projector; None when the model cannot see or the picture cannot be
        read (sending it says why)."""
        try:
            self._load_beside()
        except ModelLoadError as exc:
            self._unsaid = exc
            return None
        if self.projector is None:
            return None
        try:
            return self.projector.picture_tokens(image)
        except PromptFormatError:
            return None

    def _load_beside(self) -> None:
        unsaid, self._unsaid = self._unsaid, None
        if unsaid is not None:
            raise unsaid
        if self.projector is None and self._beside is not None and self._target is not None:
            beside, self._beside = self._beside, None  # tried once: a file that does not fit says so once
            self.load(beside, self._target)

    def prompt(self, rendered: RenderedPrompt, images: Sequence[ImageInput], model_name: str) -> MediaPrompt:
        """The tokens of `rendered` (its text holds a marker per picture). Raises PromptFormatError with a sentence
        when the model cannot see or a picture cannot be read."""
        self._load_beside()
        if self.projector is None:
            raise PromptFormatError(
                f"{model_name} cannot see pictures: load the projector (the mmproj file) made "
                "for it, or send the message without them."
            )
        key = (rendered.text, tuple(image.digest for image in images))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        known = None
        last = self._transcript
        if last is not None:
            text, tokens, media = last
            seen = len(media.digests)
            if rendered.text.startswith(text) and key[1][:seen] == tuple(media.digests):
                # The conversation goes on: its tokens as generated are reused, so the cache matches them all.
                known, images = (len(text), tokens, media), images[seen:]
        made = self.projector.prompt(rendered.text, rendered.markup, images, known)
        self._last = (key, made)
        return made

    def count_tokens(self, prompts: Prompts, messages: Sequence[dict], config: Optional[GenerationConfig]) -> int:
        """The tokens of a prompt with pictures, as `config` renders it (the pictures read once, for the reply too)."""
        flat, images = with_markers(messages)
        tools = json.loads(config.tools) if config is not None and config.tools else ()
        return len(self.prompt(prompts.render(flat, tools, config), images, prompts.target.path.name).tokens)

    def remember(self, text: str, tokens: list[int], media: MediaPrompt) -> None:
        """A prompt with pictures plus its reply, and their tokens: what the next turn goes on from."""
        self._transcript = (text, tokens, media)
