"""Finding the documents a person names: files as named, folders walked with bounds.

A folder is walked in name order, its hidden entries (".git") and tool folders (node_modules, __pycache__) left
out, and only files whose name a reader knows are taken. Links are followed, but a folder already walked is never
walked again (a link loop, or two links to one folder), nor is one file taken twice. The walk stops at MAX_DOCUMENTS
documents or MAX_ENTRIES entries looked at, whichever comes first, and says so in one sentence: a home folder
named by mistake is a bounded walk, not an hour's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from app.documents.formats import kind_of
from app.documents.records import IndexNote

MAX_DOCUMENTS = 10_000
MAX_ENTRIES = 200_000
MAX_DEPTH = 64
_TOOL_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages", "venv"})


@dataclass
class FoundDocuments:
    """The files found (absolute paths, in walk order), what was said on the way, and whether every folder was
    walked to its end (only then is a file missing from `files` known to be gone)."""

    files: list[str] = field(default_factory=list)
    notes: list[IndexNote] = field(default_factory=list)
    complete: bool = True


def find_documents(
    paths: list[str], max_documents: int = MAX_DOCUMENTS, max_entries: int = MAX_ENTRIES
) -> FoundDocuments:
    found = FoundDocuments()
    seen_files: set[tuple[int, int]] = set()
    seen_folders: set[tuple[int, int]] = set()
    entries = 0
    for named in paths:
        root = os.path.abspath(named)
        try:
            info = os.stat(root)
        except FileNotFoundError:
            found.notes.append(IndexNote(root, f"{root} does not exist."))
            continue
        except (OSError, ValueError) as exc:
            found.notes.append(IndexNote(root, f"{root} could not be read ({getattr(exc, 'strerror', None) or exc})."))
            continue
        if not os.path.isdir(root):
            if (info.st_dev, info.st_ino) not in seen_files:
                seen_files.add((info.st_dev, info.st_ino))
                found.files.append(root)
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        seen_folders.add((info.st_dev, info.st_ino))
        while stack:
            folder, depth = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    names = sorted(listing, key=lambda entry: entry.name)
            except OSError as exc:
                found.notes.append(IndexNote(folder, f"{folder} could not be read ({exc.strerror or exc})."))
                found.complete = False  # its files may still be there: a refresh must not forget them
                continue
            subfolders: list[str] = []
            for entry in names:
                entries += 1
                if entries > max_entries or len(found.files) >= max_documents:
                    found.complete = False
                    limit = (
                        f"{max_documents:,} documents"
                        if len(found.files) >= max_documents
                        else (f"{max_entries:,} files and folders")
                    )
                    found.notes.append(
                        IndexNote(root, f"{root} holds more than {limit}; the first were taken and the rest left out.")
                    )
                    return found
                if entry.name.startswith(".") or entry.name in _TOOL_FOLDERS:
                    continue
                try:
                    is_folder = entry.is_dir()
                    is_file = not is_folder and entry.is_file()
                    if not (is_folder or is_file):
                        continue
                    entry_info = entry.stat()
                except OSError:
                    continue  # a dangling link, or one removed while walked
                identity = (entry_info.st_dev, entry_info.st_ino)
                if is_folder:
                    if identity in seen_folders:
                        if entry.is_symlink():
                            found.notes.append(
                                IndexNote(
                                    entry.path, f"{entry.path} links to a folder already walked; it was walked once."
                                )
                            )
                        continue
                    if depth + 1 > MAX_DEPTH:
                        found.notes.append(IndexNote(entry.path, f"{entry.path} is nested too deep; it was left out."))
                        continue
                    seen_folders.add(identity)
                    subfolders.append(entry.path)
                elif kind_of(entry.name) is not None and identity not in seen_files:
                    seen_files.add(identity)
                    found.files.append(entry.path)
            stack.extend((sub, depth + 1) for sub in reversed(subfolders))
    return found
