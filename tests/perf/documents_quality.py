"""Does retrieval find the right document? A question set of our own over Node.js's API manual (the Markdown files
Debian ships in /usr/share/doc/nodejs/api, 64 files, 3.5 MB), by words alone and by words and meaning fused, with
a real GGUF embedding model (all-MiniLM-L6-v2, 384 floats) through llama-cpp-python; and how fast each indexes.

    python -m tests.perf.documents_quality DEST [--docs /usr/share/doc/nodejs/api] [--embedding MODEL.gguf]
                                               [--sample 100] [--hybrid]

The Markdown files are copied into DEST first (the folder also holds each page as HTML, and all.html, every page in
one). A question counts as found when one of its right documents is among the sources `retrieve` gives within
1,536 tokens (what `generate --docs` gives with --ctx 4096 and --max-tokens 1024).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import numpy as np

from app.documents.index import DocumentIndex
from app.documents.indexer import refresh
from app.documents.retrieval import retrieve

BUDGET = 1536

# (question, the documents that answer it): worded as a user would ask, often not in the manual's words.
QUESTIONS = [
    ("How do I compute a SHA-256 digest of a string?", ["crypto.md", "webcrypto.md"]),
    ("How can I go through a file one line at a time?", ["readline.md"]),
    ("When does a callback queued with nextTick run compared to promise callbacks?", ["process.md"]),
    ("How do I run a shell command and capture what it prints?", ["child_process.md"]),
    ("How can I gzip some data?", ["zlib.md"]),
    ("How do I turn a hostname into an IP address?", ["dns.md"]),
    ("How do I use several CPU threads that share memory?", ["worker_threads.md"]),
    ("How can I be told when files in a directory change?", ["fs.md"]),
    ("How do I join path segments so it works on Windows and Linux?", ["path.md"]),
    ("How do I measure how long an operation took with a high-resolution clock?", ["perf_hooks.md", "process.md"]),
    ("How do I make a TCP server listen on a port?", ["net.md"]),
    ("How do I check in a test that two objects are deeply equal?", ["assert.md"]),
    ("How do I handle an event only the first time it fires?", ["events.md"]),
    ("How do I read the query parameters out of a URL?", ["url.md", "querystring.md"]),
    ("How do I run several processes that share one server port?", ["cluster.md"]),
    ("How do I turn binary data into base64 text?", ["buffer.md"]),
    ("How many CPUs does the machine have and how much memory is free?", ["os.md"]),
    ("How can I run untrusted code in a separate context?", ["vm.md"]),
    ("How do I write a native addon against the stable ABI?", ["n-api.md", "addons.md"]),
    ("How do I call a function again every second?", ["timers.md"]),
    ("How do I ask the user a question in the terminal and read the answer?", ["readline.md"]),
    ("How do I serve HTTPS with my certificate and key?", ["https.md", "tls.md"]),
    ("How do I format a string with placeholders like printf?", ["util.md", "console.md"]),
    ("How do I write and run unit tests without installing a framework?", ["test.md"]),
    ("Can I import an ES module from a CommonJS file?", ["esm.md", "modules.md"]),
]


class LlamaEmbedder:
    """A GGUF embedding model through llama-cpp-python: rows of length 1, a passage cut to the model's context."""

    def __init__(self, path: str, threads: int = 2):
        from llama_cpp import Llama

        self.model = Llama(
            model_path=path, embedding=True, n_ctx=512, n_batch=512, n_ubatch=512, n_threads=threads, verbose=False
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [self.model.embed(text, normalize=True, truncate=True) for text in texts]
        return np.asarray(rows, dtype=np.float32)


def evaluate(index: DocumentIndex, docs: str, embedder) -> tuple[int, list[str]]:
    found, missed = 0, []
    for question, answers in QUESTIONS:
        sources = retrieve(index, question, BUDGET, roots=[docs], embedder=embedder).sources
        names = {os.path.basename(s.path) for s in sources}
        if names & set(answers):
            found += 1
        else:
            missed.append(f"{question} -> {sorted(names)[:4]}")
    return found, missed


def _report(label: str, index: DocumentIndex, docs: str, embedder, summary, seconds: float, text_mb: float) -> None:
    started = time.perf_counter()
    found, missed = evaluate(index, docs, embedder)
    per_question = (time.perf_counter() - started) / len(QUESTIONS)
    print(
        f"{label}: indexed {summary.added} files, {summary.passages:,} passages, {text_mb:.1f} MB in "
        f"{seconds:.1f} s ({text_mb / seconds * 60:.1f} MB a minute), {index.path.stat().st_size / 1e6:.1f} MB on "
        f"disk; right document cited for {found}/{len(QUESTIONS)} questions ({per_question * 1000:.0f} ms a "
        "question, its embedding included)"
    )
    for line in missed:
        print(f"  missed: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--docs", default="/usr/share/doc/nodejs/api")
    parser.add_argument(
        "--embedding", default=str(Path.home() / ".cache/specchat-test-models/all-minilm-l6-v2-f16.gguf")
    )
    parser.add_argument("--sample", type=int, default=100, help="passages embedded to time the embedding model")
    parser.add_argument(
        "--hybrid", action="store_true", help="also index the whole manual with vectors and ask again (long on a CPU)"
    )
    args = parser.parse_args()
    copy = args.dest / "manual"
    copy.mkdir(parents=True, exist_ok=True)
    for page in Path(args.docs).glob("*.md"):
        shutil.copyfile(page, copy / page.name)
    docs = str(copy.resolve())
    text_mb = sum(p.stat().st_size for p in copy.glob("*.md")) / 1e6
    path = args.dest / "quality-words.db"
    path.unlink(missing_ok=True)
    with DocumentIndex(path) as index:
        started = time.perf_counter()
        summary = refresh(index, [docs])
        _report("words", index, docs, None, summary, time.perf_counter() - started, text_mb)
        rows = index.conn.execute("SELECT text FROM passages ORDER BY random() LIMIT ?", (args.sample,)).fetchall()
    embedder = LlamaEmbedder(args.embedding)
    texts = [row[0] for row in rows]
    started = time.perf_counter()
    embedder.embed(texts)
    seconds = time.perf_counter() - started
    sample_mb = sum(len(t.encode()) for t in texts) / 1e6
    print(
        f"embedding {len(texts)} passages ({sample_mb * 1e3:.0f} KB) took {seconds:.1f} s: "
        f"{len(texts) / seconds * 60:.0f} passages a minute, {sample_mb / seconds * 60:.2f} MB a minute"
    )
    if args.hybrid:
        path = args.dest / "quality-hybrid.db"
        path.unlink(missing_ok=True)
        with DocumentIndex(path) as index:
            started = time.perf_counter()
            summary = refresh(index, [docs], embedder=embedder, embedder_name="all-MiniLM-L6-v2")
            _report("words + meaning", index, docs, embedder, summary, time.perf_counter() - started, text_mb)


if __name__ == "__main__":
    main()
