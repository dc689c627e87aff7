"""Known-good target + draft pairs, offered first in "Get models" so a newcomer needs no GGUF knowledge.

Each draft shares its target's tokenizer (same family, same vocabulary), which is what speculative decoding
needs. Targets are Q4_K_M (the usual quality/size balance). Drafts are Q8_0 where that stays small: a draft's
quality drives how many of its tokens the target accepts, and at 0.3-1 B parameters the extra bytes are cheap.
Sizes are approximate (they are shown as "about"); the exact size comes from the Hub when the download starts.

Repository and file names follow each publisher's naming as of 2025 and could not be checked against the Hub from
the machine this was written on; a renamed file shows up as a clear "does not exist" error, not a crash.

Vision pairs (issue 46): the Gemma 3 4B, 12B and 27B pairs carry their projector, bartowski's
mmproj-google_gemma-3-{4b,12b,27b}-it-f16.gguf from the same repository as the weights. These names were checked on
2026-12-05 through the search tool, not the Hub: each appears with its bartowski/google_gemma-3-*-it-GGUF resolve URL
in several independent projects' download scripts and catalogs (the 12B one with its size, 854,200,224 bytes), and
the 4B one in bartowski's model card. They keep the target files the text pairs had, so a target downloaded before
needs only its projector. Its name starts with the model's, so the engine finds it beside the model
(app.engine.gguf.mmproj); a projector published under a generic name (ggml-org's mmproj-model-f16.gguf) is saved
under one that pairs it (`CuratedPair` sets `save_as`). Qwen2.5-VL (whose vocabulary Qwen2.5 0.5B shares) is left
out: its projector places pictures in two dimensions (M-RoPE), which the engine refuses (docs/images.md).

An embedding model (issue 56) for document search and `serve --embedding`: nomic-embed-text v1.5 at Q8_0 from Nomic's
own GGUF repository (nomic-ai/nomic-embed-text-v1.5-GGUF, nomic-embed-text-v1.5.Q8_0.gguf, 146,146,432 bytes). The
name and size were checked on 2026-12-06 through the search tool, not the Hub: the resolve URL appears in several
independent projects' download scripts, and the size in a model catalog. It was trained on passages of up to 8,192
tokens (SpecChat reads up to 2,048 at once) and is Apache-2.0. No reranker is offered: none was measured here to pay
for its time.

Thinking models (issue 31): Qwen3 pairs with its own 0.6B, which shares its vocabulary. gpt-oss-20b has no smaller
model of its vocabulary, so it comes alone: it speculates with the draft-free drafters (n-grams of the chat and of
the person's history), which suit its long, self-repeating reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from app.engine.gguf.kind import ModelKind
from app.engine.gguf.mmproj import name_beside
from app.hub.download_plan import DownloadItem

_MB = 1000**2
_GB = 1000**3


@dataclass(frozen=True)
class CuratedFile:
    """One GGUF file on the Hub (a single file; curated models are never split)."""

    repo_id: str
    filename: str
    approx_size: int  # bytes, for display before the Hub is asked
    label: str  # "Qwen2.5-Coder 7B Instruct (Q4_K_M)"
    revision: Optional[str] = None  # None: the repo's main branch
    save_as: Optional[str] = None  # the name in the models folder, where it is not the published one

    @property
    def item(self) -> DownloadItem:
        """What the download fetches; `item.name` is the file's name in the models folder."""
        return DownloadItem(self.repo_id, self.filename, self.revision, self.save_as)


@dataclass(frozen=True)
class CuratedPair:
    """A target model and a draft model that speculates well for it, or a target alone (draft None) where no
    smaller model shares its vocabulary."""

    pair_id: str
    family: str
    title: str
    target: CuratedFile
    draft: Optional[CuratedFile]
    good_at: str
    needs_token: bool = False  # gated upstream: the person must accept terms and add a token
    # A vision model's projector (mmproj): the pair can see pictures. Saved under a name that pairs it with the target.
    projector: Optional[CuratedFile] = None
    # What the target is for: an embedding model is downloaded for document search and `serve --embedding`, never
    # loaded as a chat model.
    kind: ModelKind = "chat"

    def __post_init__(self) -> None:
        if self.projector is not None:
            paired = name_beside(self.target.item.name, self.projector.filename.rsplit("/", 1)[-1])
            object.__setattr__(self, "projector", replace(self.projector, save_as=paired))

    @property
    def approx_size(self) -> int:
        return sum(f.approx_size for f in self.files)

    @property
    def files(self) -> tuple[CuratedFile, ...]:
        """The files to download: the target, then the draft and the projector where there are."""
        return tuple(f for f in (self.target, self.draft, self.projector) if f is not None)


def _qwen_coder_draft() -> CuratedFile:
    return CuratedFile(
        "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        "qwen2.5-coder-0.5b-instruct-q8_0.gguf",
        531 * _MB,
        "Qwen2.5-Coder 0.5B Instruct (Q8_0)",
    )


def _qwen_draft() -> CuratedFile:
    return CuratedFile(
        "Qwen/Qwen2.5-0.5B-Instruct-GGUF",
        "qwen2.5-0.5b-instruct-q8_0.gguf",
        676 * _MB,
        "Qwen2.5 0.5B Instruct (Q8_0)",
    )


def _gemma_270m_draft() -> CuratedFile:
    return CuratedFile(
        "ggml-org/gemma-3-270m-it-GGUF",
        "gemma-3-270m-it-Q8_0.gguf",
        292 * _MB,
        "Gemma 3 270M Instruct (Q8_0)",
    )


def _gemma_1b_draft() -> CuratedFile:
    return CuratedFile(
        "bartowski/google_gemma-3-1b-it-GGUF",
        "google_gemma-3-1b-it-Q8_0.gguf",
        1070 * _MB,
        "Gemma 3 1B Instruct (Q8_0)",
    )


def _gemma_projector(size: str, approx_size: int) -> CuratedFile:
    """bartowski's projector for Gemma 3 `size` ("4b", "12b", "27b"), beside the weights in the same repository."""
    return CuratedFile(
        f"bartowski/google_gemma-3-{size}-it-GGUF",
        f"mmproj-google_gemma-3-{size}-it-f16.gguf",
        approx_size,
        f"Gemma 3 {size.upper()} picture projector (F16)",
    )


def _qwen3_draft() -> CuratedFile:
    return CuratedFile(
        "Qwen/Qwen3-0.6B-GGUF",
        "Qwen3-0.6B-Q8_0.gguf",
        639 * _MB,
        "Qwen3 0.6B (Q8_0)",
    )


CURATED_PAIRS: tuple[CuratedPair, ...] = (
    CuratedPair(
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder",
        "Qwen2.5-Coder 1.5B + 0.5B draft",
        CuratedFile(
            "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            1120 * _MB,
            "Qwen2.5-Coder 1.5B Instruct (Q4_K_M)",
        ),
        _qwen_coder_draft(),
        "Code completion and small coding questions on any laptop; the quickest way to see speculation work.",
    ),
    CuratedPair(
        "qwen2.5-coder-7b",
        "Qwen2.5-Coder",
        "Qwen2.5-Coder 7B + 0.5B draft",
        CuratedFile(
            "bartowski/Qwen2.5-Coder-7B-Instruct-GGUF",
            "Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf",
            4680 * _MB,
            "Qwen2.5-Coder 7B Instruct (Q4_K_M)",
        ),
        _qwen_coder_draft(),
        "Everyday coding help: writing, explaining and fixing code. Code is predictable, so drafts are often "
        "accepted and the speed-up is large. Needs about 8 GB of memory.",
    ),
    CuratedPair(
        "qwen2.5-coder-14b",
        "Qwen2.5-Coder",
        "Qwen2.5-Coder 14B + 0.5B draft",
        CuratedFile(
            "bartowski/Qwen2.5-Coder-14B-Instruct-GGUF",
            "Qwen2.5-Coder-14B-Instruct-Q4_K_M.gguf",
            8990 * _MB,
            "Qwen2.5-Coder 14B Instruct (Q4_K_M)",
        ),
        _qwen_coder_draft(),
        "Stronger coding and refactoring across larger files. Needs about 16 GB of memory.",
    ),
    CuratedPair(
        "qwen2.5-coder-32b",
        "Qwen2.5-Coder",
        "Qwen2.5-Coder 32B + 0.5B draft",
        CuratedFile(
            "bartowski/Qwen2.5-Coder-32B-Instruct-GGUF",
            "Qwen2.5-Coder-32B-Instruct-Q4_K_M.gguf",
            19850 * _MB,
            "Qwen2.5-Coder 32B Instruct (Q4_K_M)",
        ),
        _qwen_coder_draft(),
        "Near the best open coding model of its size; slow without speculation, which is where the draft "
        "helps most. Needs about 24 GB of memory or a large GPU.",
    ),
    CuratedPair(
        "qwen2.5-7b",
        "Qwen2.5",
        "Qwen2.5 7B Instruct + 0.5B draft",
        CuratedFile(
            "bartowski/Qwen2.5-7B-Instruct-GGUF",
            "Qwen2.5-7B-Instruct-Q4_K_M.gguf",
            4680 * _MB,
            "Qwen2.5 7B Instruct (Q4_K_M)",
        ),
        _qwen_draft(),
        "General chat, writing, summaries and many languages. Needs about 8 GB of memory.",
    ),
    CuratedPair(
        "qwen2.5-14b",
        "Qwen2.5",
        "Qwen2.5 14B Instruct + 0.5B draft",
        CuratedFile(
            "bartowski/Qwen2.5-14B-Instruct-GGUF",
            "Qwen2.5-14B-Instruct-Q4_K_M.gguf",
            8990 * _MB,
            "Qwen2.5 14B Instruct (Q4_K_M)",
        ),
        _qwen_draft(),
        "Better reasoning and longer answers than the 7B for general chat. Needs about 16 GB of memory.",
    ),
    CuratedPair(
        "llama3.1-8b",
        "Llama 3",
        "Llama 3.1 8B Instruct + Llama 3.2 1B draft",
        CuratedFile(
            "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
            "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf",
            4920 * _MB,
            "Llama 3.1 8B Instruct (Q4_K_M)",
        ),
        CuratedFile(
            "bartowski/Llama-3.2-1B-Instruct-GGUF",
            "Llama-3.2-1B-Instruct-Q8_0.gguf",
            1320 * _MB,
            "Llama 3.2 1B Instruct (Q8_0)",
        ),
        "Well-rounded English chat and instruction following; Llama 3.2 1B shares its tokenizer. "
        "Needs about 8 GB of memory.",
    ),
    CuratedPair(
        "gemma3-4b",
        "Gemma 3",
        "Gemma 3 4B + 270M draft (sees pictures)",
        CuratedFile(
            "bartowski/google_gemma-3-4b-it-GGUF",
            "google_gemma-3-4b-it-Q4_K_M.gguf",
            2490 * _MB,
            "Gemma 3 4B Instruct (Q4_K_M)",
        ),
        _gemma_270m_draft(),
        "Friendly chat and writing on modest hardware, strong for its size in many languages. Reads pictures: "
        "paste a screenshot or a photo and ask about it.",
        projector=_gemma_projector("4b", 851 * _MB),
    ),
    CuratedPair(
        "gemma3-12b",
        "Gemma 3",
        "Gemma 3 12B + 1B draft (sees pictures)",
        CuratedFile(
            "bartowski/google_gemma-3-12b-it-GGUF",
            "google_gemma-3-12b-it-Q4_K_M.gguf",
            7300 * _MB,
            "Gemma 3 12B Instruct (Q4_K_M)",
        ),
        _gemma_1b_draft(),
        "Thoughtful chat, writing and multilingual work, and questions about pictures. Needs about 12 GB of memory.",
        projector=_gemma_projector("12b", 854 * _MB),
    ),
    CuratedPair(
        "gemma3-27b",
        "Gemma 3",
        "Gemma 3 27B + 1B draft (sees pictures)",
        CuratedFile(
            "bartowski/google_gemma-3-27b-it-GGUF",
            "google_gemma-3-27b-it-Q4_K_M.gguf",
            16550 * _MB,
            "Gemma 3 27B Instruct (Q4_K_M)",
        ),
        _gemma_1b_draft(),
        "Google's largest Gemma 3: high-quality answers, about text or pictures, if you have about 24 GB of memory.",
        projector=_gemma_projector("27b", 858 * _MB),
    ),
    CuratedPair(
        "qwen3-8b",
        "Qwen3",
        "Qwen3 8B + 0.6B draft (thinks)",
        CuratedFile("Qwen/Qwen3-8B-GGUF", "Qwen3-8B-Q4_K_M.gguf", 5030 * _MB, "Qwen3 8B (Q4_K_M)"),
        _qwen3_draft(),
        "A thinking model: it reasons before it answers (shown apart, and can be turned off per chat), for "
        "maths, code and careful questions. Its long reasoning repeats itself, which the draft predicts well. "
        "Needs about 8 GB of memory.",
    ),
    CuratedPair(
        "gpt-oss-20b",
        "gpt-oss",
        "gpt-oss 20B (thinks; no draft model)",
        CuratedFile("ggml-org/gpt-oss-20b-GGUF", "gpt-oss-20b-mxfp4.gguf", 12110 * _MB, "gpt-oss 20B (MXFP4)"),
        None,
        "OpenAI's open-weight thinking model, with low, medium and high reasoning effort. No smaller model "
        "shares its vocabulary, so it speculates from n-grams of the chat and your history. A mixture of "
        "experts: fast for its size, but needs about 16 GB of memory.",
    ),
    CuratedPair(
        "nomic-embed-text-v1.5",
        "Nomic Embed",
        "nomic-embed-text v1.5 (embedding model, for document search)",
        CuratedFile(
            "nomic-ai/nomic-embed-text-v1.5-GGUF",
            "nomic-embed-text-v1.5.Q8_0.gguf",
            146 * _MB,
            "nomic-embed-text v1.5 (Q8_0)",
        ),
        None,
        "Not a chat model: it turns passages of your documents into vectors, so that a question finds the "
        "passages that answer it, and serves /v1/embeddings (serve --embedding). Small: runs beside any chat model.",
        kind="embedding",
    ),
)


def curated_pairs() -> tuple[CuratedPair, ...]:
    return CURATED_PAIRS
