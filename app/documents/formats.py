"""Reading a document's text: plain text, Markdown and code as UTF-8, HTML with the standard library's parser, PDF
with pypdf and DOCX with python-docx. Every read is bounded, and whatever a file is, the answer is its text or one
sentence (DocumentError) saying why it was skipped: never a traceback.

HTML and DOCX headings become Markdown headings ("## Install"), so the passages follow them as they follow a
Markdown file's. A PDF's pages are joined with a blank line and their starts kept, so a passage knows its page.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import zipfile
from pathlib import Path
from typing import Optional

from app.common.bounded_read import FileReadError, read_bounded
from app.common.units import format_bytes
from app.documents.html_text import html_to_text
from app.documents.records import DocumentKind, DocumentText

# Text files (Markdown, code, HTML) are read whole: 32 MB is a long book many times over, and the passages of one
# document are written in one transaction, so one file's text is what indexing holds in memory at a time.
MAX_TEXT_BYTES = 32_000_000
# PDF and DOCX files carry pictures and fonts beside their text; their text is held to MAX_TEXT_BYTES all the same.
MAX_PDF_BYTES = 256_000_000
MAX_DOCX_BYTES = 128_000_000
# A DOCX is a zip: what its parts inflate to is checked before python-docx inflates them (a zip bomb).
MAX_DOCX_INFLATED_BYTES = 256_000_000
MAX_PDF_PAGES = 5_000
# Bytes looked at for a NUL, which tells a binary file from text (what git and grep decide by too).
_SNIFF_BYTES = 8192

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd"})
CODE_SUFFIXES = frozenset(
    ".py .pyi .js .mjs .cjs .ts .tsx .jsx .c .h .cc .cpp .cxx .hpp .hh .rs .go .java .kt .kts .swift .rb .php .cs "
    ".scala .lua .sh .bash .zsh .ps1 .sql .r .jl .pl .hs .ml .ex .exs .dart .vue .svelte .zig .nim .m".split()
)
TEXT_SUFFIXES = frozenset(
    ".txt .text .rst .adoc .org .tex .log .csv .tsv .json .jsonl .yaml .yml .toml .ini .cfg .conf .xml".split()
)
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})


class DocumentError(ValueError):
    """A file that was not indexed, with the one sentence that says which and why."""


def kind_of(path: str | os.PathLike[str]) -> Optional[DocumentKind]:
    """What a file is read as, by its name; None for a name no document reader knows (skipped in a folder)."""
    suffix = Path(path).suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in CODE_SUFFIXES:
        return "code"
    if suffix in TEXT_SUFFIXES:
        return "text"
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix == ".pdf":
        return "pdf"
    if suffix == ".docx":
        return "docx"
    return None


def _limit(kind: DocumentKind) -> int:
    return {"pdf": MAX_PDF_BYTES, "docx": MAX_DOCX_BYTES}.get(kind, MAX_TEXT_BYTES)


def read_file_bytes(path: str, kind: DocumentKind) -> bytes:
    """The file's bytes, within its kind's limit; DocumentError with one sentence otherwise."""
    limit = _limit(kind)
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise DocumentError(f"{path} was removed before it could be read; it was skipped.") from None
    except OSError as exc:
        raise DocumentError(f"{path} could not be read ({exc.strerror or exc}); it was skipped.") from None
    if size > limit:  # said before reading any of it
        raise DocumentError(
            f"{path} is {format_bytes(size)}; {kind} files up to {format_bytes(limit)} are indexed, so it was skipped."
        )
    try:
        return read_bounded(path, limit)
    except FileReadError as exc:
        if exc.reason == "does not exist":
            raise DocumentError(f"{path} was removed before it could be read; it was skipped.") from None
        raise DocumentError(f"{exc}; it was skipped.") from None


def read_document(path: str, kind: Optional[DocumentKind] = None) -> tuple[DocumentText, str]:
    """The document at `path` read as `kind` (by its name when None; text when the name says nothing), and the
    sha256 of its bytes. Raises DocumentError."""
    kind = kind or kind_of(path) or "text"
    data = read_file_bytes(path, kind)
    return document_from_bytes(path, kind, data), hashlib.sha256(data).hexdigest()


def document_from_bytes(path: str, kind: DocumentKind, data: bytes) -> DocumentText:
    """The document's text out of its bytes. Raises DocumentError."""
    if kind == "pdf":
        return _pdf(path, data)
    if kind == "docx":
        return DocumentText(path, "docx", _docx(path, data))
    text = decode_text(path, data)
    if kind == "html":
        return DocumentText(path, "html", html_to_text(text))
    return DocumentText(path, kind, text)


def decode_text(path: str, data: bytes) -> str:
    """UTF-8 text (a BOM dropped); DocumentError for a binary file, whatever its name says."""
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise DocumentError(f"{path} is a binary file, not text, whatever its name says; it was skipped.")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"{path} is not UTF-8 text (a bad byte at offset {exc.start:,}); it may be binary, and it was skipped."
        ) from None


def _pdf(path: str, data: bytes) -> DocumentText:
    import pypdf

    # pypdf logs each repair it makes of a damaged file; the sentence below is what a person needs.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = bool(reader.decrypt(""))  # many PDFs are "encrypted" with an empty password only
            except Exception:  # pypdf's DependencyError for AES without `cryptography`, or a broken dictionary
                opened = False
            if not opened:
                raise DocumentError(f"{path} is protected by a password, so its text cannot be read; it was skipped.")
        count = len(reader.pages)
    except DocumentError:
        raise
    except Exception as exc:  # pypdf raises its own errors and plain ones (KeyError, ValueError) on a broken file
        raise DocumentError(
            f"{path} could not be read as a PDF ({type(exc).__name__}: it may be damaged); it was skipped."
        ) from None
    if count > MAX_PDF_PAGES:
        raise DocumentError(f"{path} has {count:,} pages; PDFs up to {MAX_PDF_PAGES:,} pages are indexed.")
    pieces: list[str] = []
    starts: list[int] = []
    length = 0
    for number in range(count):
        try:
            page_text = reader.pages[number].extract_text() or ""
        except Exception:  # one damaged page: its text is left out, the rest is read
            page_text = ""
        page_text = page_text.strip()
        starts.append(length)
        pieces.append(page_text)
        length += len(page_text) + 2
        if length > MAX_TEXT_BYTES:
            raise DocumentError(f"{path} holds more than {format_bytes(MAX_TEXT_BYTES)} of text; it was skipped.")
    text = "\n\n".join(pieces)
    if not text.strip():
        raise DocumentError(f"{path} has no text to read (scanned pages need OCR, which SpecChat has not); skipped.")
    return DocumentText(path, "pdf", text, tuple(starts))


def _docx(path: str, data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            inflated = sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError):
        raise DocumentError(
            f"{path} is not a DOCX document (it is no zip archive; it may be damaged); skipped."
        ) from None
    if inflated > MAX_DOCX_INFLATED_BYTES:
        raise DocumentError(
            f"{path} unpacks to {format_bytes(inflated)}; DOCX files up to {format_bytes(MAX_DOCX_INFLATED_BYTES)} "
            "unpacked are indexed, so it was skipped."
        )
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
        lines: list[str] = []
        for block in document.iter_inner_content():
            if isinstance(block, docx.table.Table):
                for row in block.rows:
                    lines.append(" | ".join(cell.text.strip() for cell in row.cells))
                lines.append("")
                continue
            text = block.text.strip()
            if not text:
                continue
            style = (block.style.name if block.style is not None else "") or ""
            level = re.fullmatch(r"Heading (\d)", style)
            if level:
                text = "#" * int(level.group(1)) + " " + text
            elif style == "Title":
                text = "# " + text
            lines.extend((text, ""))
    except DocumentError:
        raise
    except Exception as exc:  # python-docx raises KeyError, lxml errors and its own on a broken package
        raise DocumentError(
            f"{path} could not be read as a DOCX document ({type(exc).__name__}: it may be damaged); it was skipped."
        ) from None
    return "\n".join(lines).strip() + "\n"
