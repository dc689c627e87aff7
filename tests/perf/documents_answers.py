"""Does the reply hold the answer? The question set of tests/perf/documents_quality.py over Node.js's API manual,
each asked through `specchat-cli generate --docs` with a real chat model (greedy), and each reply checked for the
answer's key terms (the API a right answer names: `createHash` for a SHA-256 digest). A check by key terms is a
floor for "holds the answer" and a ceiling for "is right": a reply can name the API and misuse it.

    python -m tests.perf.documents_answers DEST --target MODEL.gguf [--docs /usr/share/doc/nodejs/api]

The manual's Markdown files are copied into DEST/manual and indexed (words alone) into DEST/answers.db first.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.perf.documents_quality import QUESTIONS

# Per question (in QUESTIONS' order), the patterns a reply that answers it names, all of them (case-insensitive).
KEYS = [
    [r"createHash|subtle\.digest"],
    [r"readline|createInterface"],
    [r"nextTick.{0,300}before|before.{0,300}promise|microtask"],
    [r"\bexec(Sync|File)?\b|\bspawn"],
    [r"gzip"],
    [r"dns\.|lookup|resolve4"],
    [r"Worker", r"SharedArrayBuffer|workerData|postMessage"],
    [r"\.watch\(|watchFile|fs\.watch"],
    [r"path\.join"],
    [r"performance\.now|hrtime"],
    [r"createServer", r"listen"],
    [r"deepStrictEqual|deepEqual"],
    [r"\.once\(|\bonce\b"],
    [r"searchParams|URLSearchParams|querystring\.parse"],
    [r"cluster"],
    [r"toString\(\s*['\"]base64|base64"],
    [r"cpus\(", r"freemem"],
    [r"\bvm\b|createContext|runIn\w*Context"],
    [r"N-API|Node-API|napi"],
    [r"setInterval"],
    [r"question\(|createInterface"],
    [r"https\.createServer|createServer", r"\bkey\b", r"\bcert\b"],
    [r"util\.format|%s|%d"],
    [r"node:test|node --test|--test"],
    [r"import\("],
]
assert len(KEYS) == len(QUESTIONS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--target", required=True)
    parser.add_argument("--docs", default="/usr/share/doc/nodejs/api")
    parser.add_argument("--max-tokens", type=int, default=256)
    args = parser.parse_args()
    copy = args.dest / "manual"
    copy.mkdir(parents=True, exist_ok=True)
    for page in Path(args.docs).glob("*.md"):
        shutil.copyfile(page, copy / page.name)
    db = args.dest / "answers.db"
    cited = answered = 0
    started = time.perf_counter()
    for (question, documents), keys in zip(QUESTIONS, KEYS):
        command = [sys.executable, "-m", "app", "generate", "--target", args.target, "--docs", str(copy),
                   "--docs-db", str(db), "--chat", question, "--json", "--temperature", "0",
                   "--max-tokens", str(args.max_tokens)]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            print(f"FAILED {question}: {done.stderr.strip().splitlines()[-1:]}")
            continue
        reply = json.loads(done.stdout)
        names = {os.path.basename(s["path"]) for s in reply.get("sources", [])}
        right = bool(names & set(documents))
        holds = all(re.search(k, reply["text"], re.IGNORECASE | re.DOTALL) for k in keys)
        cited += right
        answered += holds
        print(f"{'cited' if right else 'MISSED'} {'answer' if holds else 'NO ANSWER'}  {question}")
        if not holds:
            print("    " + reply["text"][:300].replace("\n", " "))
    n = len(QUESTIONS)
    print(
        f"right document cited {cited}/{n} ({100 * cited / n:.0f}%), reply holds the answer {answered}/{n} "
        f"({100 * answered / n:.0f}%), {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
