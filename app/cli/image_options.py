"""`generate --image FILE` (repeatable) and `--mmproj FILE`: pictures in the --chat message, for a model that sees
(a local --target with its projector, or a --server's model: the pictures go to it as data: URLs).

Every picture is read by the bounded reader (a device or a FIFO is refused, app.common.bounded_read) and checked
(app.engine.image_files) before a model is loaded, and the projector is found
(--mmproj, else the mmproj-*.gguf beside the target, app.engine.gguf.mmproj) before then too, so bad input costs one sentence, not a load.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional

from app.cli.checks import UsageError
from app.common.bounded_read import FileReadError, file_problem, read_bounded
from app.engine.errors import PromptFormatError
from app.engine.gguf.mmproj import mmproj_beside
from app.engine.image_files import MAX_IMAGE_BYTES, ImageInput, check_picture, check_pictures


def add_image_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--image",
        metavar="FILE",
        action="append",
        default=[],
        help="a picture (PNG, JPEG, GIF or BMP) for the --chat message, before its text (repeatable); "
        "the target must see: it needs its projector (--mmproj), or a --server's model that sees",
    )
    p.add_argument(
        "--mmproj",
        metavar="FILE",
        default=None,
        help="the target's projector for --image (llama.cpp's mmproj-*.gguf); default: the one beside "
        "the target named after it (mmproj-NAME-F16.gguf for NAME-Q4_K_M.gguf), or the only one in a "
        "folder of one model",
    )


def read_images(args: argparse.Namespace) -> list[ImageInput]:
    """The --image files, read and checked. Raises UsageError with one sentence."""
    images = []
    for name in args.image:
        path = Path(name)
        try:
            data = read_bounded(path, MAX_IMAGE_BYTES)
        except FileReadError as exc:
            raise UsageError(f"--image: {exc}") from None
        try:
            check_picture(data, path.name)
        except PromptFormatError as exc:
            raise UsageError(f"--image: {exc}") from None
        images.append(ImageInput(data, path.name))
    try:
        check_pictures(images)
    except PromptFormatError as exc:
        raise UsageError(f"--image: {exc}") from None
    return images


def image_problem(args: argparse.Namespace) -> Optional[str]:
    """What keeps --image or --mmproj from working with the other options, or None."""
    if not args.image:
        return "--mmproj goes with --image FILE" if args.mmproj else None
    if args.chat is None:
        return "--image goes with --chat MESSAGE (a picture is part of a chat message)"
    if args.server:
        # The server's model reads them (it refuses them, with its reason, where it cannot see).
        return "--mmproj goes with a local --target; a --server loads its own projector" if args.mmproj else None
    if projector_path(args) is None:
        return (
            f"{Path(args.target).name} cannot see pictures: no mmproj-*.gguf lies beside it; give its "
            "projector with --mmproj FILE"
        )
    problem = file_problem(args.mmproj) if args.mmproj else None
    return f"--mmproj: {problem}" if problem else None


def projector_path(args: argparse.Namespace) -> Optional[Path]:
    if args.mmproj:
        return Path(args.mmproj)
    return mmproj_beside(Path(args.target)) if args.target else None


def image_content(text: str, images: list[ImageInput]) -> str | list[dict]:
    """The --chat message's content: its text, after its pictures when there are any."""
    if not images:
        return text
    return [*({"type": "image", "image": image} for image in images), {"type": "text", "text": text}]
