"""A local stand-in for the Hugging Face Hub on 127.0.0.1, speaking the endpoints huggingface_hub calls.

Point HF_ENDPOINT at `FakeHub.url` and huggingface_hub's real code runs against it:

    GET  /api/models?search=&filter=&sort=&limit=            HfApi.list_models
    GET  /api/models/{repo}/tree/{rev}[/{path}]?recursive=   HfApi.list_repo_tree
    POST /api/models/{repo}/paths-info/{rev}                 HfApi.get_paths_info
    GET  /api/models/{repo}[/revision/{rev}]                 HfApi.model_info
    GET  /api/whoami-v2                                      HfApi.whoami (token check)
    HEAD /{repo}/resolve/{rev}/{path}                        get_hf_file_metadata
    GET  /{repo}/resolve/{rev}/{path}                        the download (Range supported)

Like the real Hub, an LFS file's resolve URL answers 302 with X-Linked-Size / X-Linked-Etag / X-Repo-Commit and
sends the bytes from a second origin (the "CDN", another port), where the Authorization header does not follow.
Errors carry the X-Error-Code headers huggingface_hub maps to its exceptions (RepoNotFound, EntryNotFound,
GatedRepo, RevisionNotFound).

Failure modes, switchable per test on the FakeHub object: drop the connection after N bytes, answer a status,
send a different size than announced, send corrupted bytes, ignore Range, slow each chunk.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional
from urllib.parse import parse_qs, quote, unquote, urlsplit

GOOD_TOKEN = "hf_valid_token"  # the token the fake Hub accepts

GATED_MESSAGE = (
    "Access to model {repo} is restricted. You must have access to it and be authenticated to access it. Please log in."
)


def payload(size: int, seed: int = 0) -> bytes:
    """Deterministic pseudo-random bytes that start like a GGUF file."""
    import random

    return b"GGUF" + random.Random(seed).randbytes(size - 4)


@dataclass
class FakeFile:
    path: str
    data: bytes
    lfs: bool = True

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def git_oid(self) -> str:
        return hashlib.sha1(b"blob %d\0" % len(self.data) + self.data).hexdigest()


@dataclass
class FakeRepo:
    repo_id: str
    files: dict[str, FakeFile] = field(default_factory=dict)
    gated: bool = False
    private: bool = False
    downloads: int = 0
    likes: int = 0
    tags: tuple[str, ...] = ("gguf",)
    commit: str = ""

    def __post_init__(self):
        if not self.commit:
            self.commit = hashlib.sha1(self.repo_id.encode()).hexdigest()


@dataclass(frozen=True)
class RequestRecord:
    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    origin: str  # "hub" or "cdn"
    query: str = ""  # the URL's query string, as sent


@dataclass
class Failures:
    """Switch these on per test; keys are repo file paths ("model.gguf")."""

    drop_after: dict[str, list[int]] = field(default_factory=dict)  # each GET pops one: close after N body bytes
    status: dict[str, int] = field(default_factory=dict)  # answer this status for the file's resolve URL
    announced_size: dict[str, int] = field(default_factory=dict)  # size the Hub claims (tree, paths-info, HEAD)
    served_extra: dict[str, int] = field(default_factory=dict)  # send this many bytes more (<0: fewer) than real
    corrupt: set[str] = field(default_factory=set)  # same length, different bytes: a checksum mismatch
    ignore_range: bool = False
    chunk_delay_s: float = 0.0
    # Send this many body bytes of the file, then wait until `resume` is set (a download caught mid-file, for as
    # long as a test needs: timing it with delays alone loses the race on a busy machine).
    pause_after: dict[str, int] = field(default_factory=dict)
    resume: threading.Event = field(default_factory=threading.Event)
    hub_status: Optional[int] = None  # every API call answers this (a Hub outage)


class FakeHub:
    """The fake Hub's state and its two HTTP servers (hub API + CDN). Start it, use `.url`, stop it."""

    def __init__(self, valid_tokens: tuple[str, ...] = (GOOD_TOKEN,), chunk_size: int = 16 * 1024):
        self.repos: dict[str, FakeRepo] = {}
        self.valid_tokens = set(valid_tokens)
        self.failures = Failures()
        self.requests: list[RequestRecord] = []
        self.chunk_size = chunk_size
        self._lock = threading.Lock()
        self._hub: Optional[ThreadingHTTPServer] = None
        self._cdn: Optional[ThreadingHTTPServer] = None
        self._threads: list[threading.Thread] = []

    # ----- set-up

    def add_repo(
        self,
        repo_id: str,
        files: dict[str, bytes],
        *,
        gated: bool = False,
        private: bool = False,
        downloads: int = 0,
        likes: int = 0,
        tags: tuple[str, ...] = ("gguf",),
        lfs: bool = True,
    ) -> FakeRepo:
        repo = FakeRepo(
            repo_id,
            {p: FakeFile(p, d, lfs=lfs) for p, d in files.items()},
            gated=gated,
            private=private,
            downloads=downloads,
            likes=likes,
            tags=tags,
        )
        self.repos[repo_id] = repo
        return repo

    def start(self) -> "FakeHub":
        self._hub = _Server(("127.0.0.1", 0), _Handler, self, "hub")
        self._cdn = _Server(("127.0.0.1", 0), _Handler, self, "cdn")
        for server in (self._hub, self._cdn):
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        for server in (self._hub, self._cdn):
            if server is not None:
                server.shutdown()
                server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> "FakeHub":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._hub is not None, "start() the fake hub first"
        return f"http://127.0.0.1:{self._hub.server_address[1]}"

    @property
    def cdn_url(self) -> str:
        assert self._cdn is not None
        return f"http://127.0.0.1:{self._cdn.server_address[1]}"

    # ----- queries for assertions

    def gets(self, file_path: Optional[str] = None) -> list[RequestRecord]:
        """GET requests that carried file bytes (resolve or CDN), optionally for one file."""
        with self._lock:
            records = list(self.requests)
        result = []
        for record in records:
            if record.method != "GET":
                continue
            if record.origin == "cdn" or "/resolve/" in record.path:
                if (
                    file_path is None
                    or record.path.endswith("/" + quote(file_path))
                    or record.path.endswith("/" + file_path)
                ):
                    result.append(record)
        return result

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self.requests.append(record)

    def find_file(self, repo_id: str, path: str) -> Optional[FakeFile]:
        repo = self.repos.get(repo_id)
        return repo.files.get(path) if repo else None

    def blob(self, sha256: str) -> Optional[tuple[FakeRepo, FakeFile]]:
        for repo in self.repos.values():
            for fake in repo.files.values():
                if fake.sha256 == sha256:
                    return repo, fake
        return None

    def announced_size(self, fake: FakeFile) -> int:
        return self.failures.announced_size.get(fake.path, len(fake.data))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address, handler, hub: FakeHub, origin: str):
        super().__init__(address, handler)
        self.hub = hub
        self.origin = origin


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # an idle keep-alive connection is closed after this, so stop() is never held up
    server: _Server

    def log_message(self, format, *args):  # keep test output clean
        pass

    # ----- dispatch

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        hub = self.server.hub
        url = urlsplit(self.path)
        path = unquote(url.path)
        hub._record(
            RequestRecord(
                method, url.path, {k.lower(): v for k, v in self.headers.items()}, self.server.origin, url.query
            )
        )
        if self.server.origin == "cdn":
            return self._cdn(method, path)
        auth = self.headers.get("Authorization", "")
        if auth and auth.removeprefix("Bearer ").strip() not in hub.valid_tokens:
            return self._error(401, "", "Invalid credentials in Authorization header")
        if path in ("", "/"):
            return self._send(200, b"fake hub", "text/plain", method=method)
        if path.startswith("/api/"):
            if hub.failures.hub_status:
                return self._error(hub.failures.hub_status, "", "The fake hub is down")
            return self._api(method, path, parse_qs(url.query))
        if "/resolve/" in path:
            return self._resolve(method, path)
        return self._error(404, "", "Not found")

    # ----- API

    def _api(self, method: str, path: str, query: dict[str, list[str]]) -> None:
        hub = self.server.hub
        if path == "/api/whoami-v2":
            if not self._authorized():
                return self._error(401, "", "Invalid credentials in Authorization header")
            return self._json(
                {
                    "type": "user",
                    "name": "specchat-tester",
                    "auth": {"accessToken": {"displayName": "tests", "role": "read"}},
                }
            )
        if path == "/api/models":
            return self._json(self._search(query))
        rest = path[len("/api/models/") :]
        parts = rest.split("/")
        if len(parts) < 2:
            return self._error(404, "RepoNotFound", "Repository not found")
        repo_id = "/".join(parts[:2])
        repo = hub.repos.get(repo_id)
        if repo is None or (repo.private and not self._authorized()):
            return self._error(404 if repo is None else 401, "RepoNotFound", "Repository not found")
        tail = parts[2:]
        if not tail or tail[0] == "revision":
            rev = tail[1] if len(tail) > 1 else "main"
            if not self._revision_ok(repo, rev):
                return self._error(404, "RevisionNotFound", "Invalid rev id")
            return self._json(self._model_info(repo))
        if tail[0] == "tree" and len(tail) >= 2:
            if not self._revision_ok(repo, tail[1]):
                return self._error(404, "RevisionNotFound", "Invalid rev id")
            folder = "/".join(tail[2:])
            recursive = (query.get("recursive") or ["false"])[0].lower() in ("true", "1")
            return self._json(self._tree(repo, folder, recursive))
        if tail[0] == "paths-info" and method == "POST" and len(tail) >= 2:
            if not self._revision_ok(repo, tail[1]):
                return self._error(404, "RevisionNotFound", "Invalid rev id")
            length = int(self.headers.get("Content-Length") or 0)
            form = parse_qs(self.rfile.read(length).decode()) if length else {}
            wanted = form.get("paths", [])
            return self._json([self._entry(repo.files[p]) for p in wanted if p in repo.files])
        return self._error(404, "", "Not found")

    def _search(self, query: dict[str, list[str]]) -> list[dict]:
        hub = self.server.hub
        search = (query.get("search") or [""])[0].lower()
        filters = query.get("filter", [])
        author = (query.get("author") or [""])[0]
        limit = int((query.get("limit") or ["1000"])[0])
        repos = [
            repo
            for repo in hub.repos.values()
            if search in repo.repo_id.lower()
            and all(f in repo.tags for f in filters)
            and (not author or repo.repo_id.split("/")[0] == author)
            and not (repo.private and not self._authorized())
        ]
        repos.sort(key=lambda r: -r.downloads)
        return [self._summary(repo) for repo in repos[:limit]]

    def _summary(self, repo: FakeRepo) -> dict:
        return {
            "_id": repo.commit[:24],
            "id": repo.repo_id,
            "modelId": repo.repo_id,
            "author": repo.repo_id.split("/")[0],
            "downloads": repo.downloads,
            "likes": repo.likes,
            "gated": "manual" if repo.gated else False,
            "private": repo.private,
            "lastModified": "2025-01-02T03:04:05.000Z",
            "tags": list(repo.tags),
            "library_name": "gguf",
        }

    def _model_info(self, repo: FakeRepo) -> dict:
        info = self._summary(repo)
        info["sha"] = repo.commit
        info["siblings"] = [{"rfilename": p} for p in sorted(repo.files)]
        return info

    def _entry(self, fake: FakeFile) -> dict:
        hub = self.server.hub
        size = hub.announced_size(fake)
        entry = {"type": "file", "oid": fake.git_oid, "size": size, "path": fake.path}
        if fake.lfs:
            entry["lfs"] = {"oid": fake.sha256, "size": size, "pointerSize": 134}
        return entry

    def _tree(self, repo: FakeRepo, folder: str, recursive: bool) -> list[dict]:
        prefix = folder.strip("/") + "/" if folder.strip("/") else ""
        entries: list[dict] = []
        folders: set[str] = set()
        for path in sorted(repo.files):
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix) :]
            if "/" in rest and not recursive:
                folders.add(prefix + rest.split("/")[0])
                continue
            # Like the Hub, a recursive listing also names each folder on the way.
            pieces = rest.split("/")[:-1]
            for depth in range(1, len(pieces) + 1):
                folders.add(prefix + "/".join(pieces[:depth]))
            entries.append(self._entry(repo.files[path]))
        dirs = [
            {"type": "directory", "oid": hashlib.sha1(f.encode()).hexdigest(), "size": 0, "path": f}
            for f in sorted(folders)
        ]
        return dirs + entries

    # ----- files

    def _resolve(self, method: str, path: str) -> None:
        hub = self.server.hub
        repo_part, _, rest = path.lstrip("/").partition("/resolve/")
        rev, _, file_path = rest.partition("/")
        repo = hub.repos.get(repo_part)
        if repo is None or (repo.private and not self._authorized()):
            return self._error(401, "RepoNotFound", "Repository not found")
        if not self._revision_ok(repo, rev):
            return self._error(404, "RevisionNotFound", "Invalid rev id")
        if repo.gated and not self._authorized():
            return self._error(401, "GatedRepo", GATED_MESSAGE.format(repo=repo.repo_id))
        status = hub.failures.status.get(file_path)
        if status == 404 or file_path not in repo.files:
            return self._error(404, "EntryNotFound", f'{file_path} does not exist on "{rev}"')
        if status:
            return self._error(status, "", "Forced failure")
        fake = repo.files[file_path]
        linked = {"X-Repo-Commit": repo.commit}
        if fake.lfs:
            size = hub.announced_size(fake)
            linked.update(
                {
                    "X-Linked-Size": str(size),
                    "X-Linked-Etag": f'"{fake.sha256}"',
                    "ETag": f'"{fake.sha256}"',
                    "Location": f"{hub.cdn_url}/blobs/{fake.sha256}?repo={quote(repo.repo_id)}",
                    "Content-Length": "0",
                }
            )
            self.send_response(302)
            for key, value in linked.items():
                self.send_header(key, value)
            self.end_headers()
            return
        return self._serve_bytes(method, fake, {"X-Repo-Commit": repo.commit, "ETag": f'"{fake.git_oid}"'})

    def _cdn(self, method: str, path: str) -> None:
        if not path.startswith("/blobs/"):
            return self._error(404, "", "Not found")
        found = self.server.hub.blob(path[len("/blobs/") :])
        if found is None:
            return self._error(404, "", "Not found")
        _, fake = found
        return self._serve_bytes(method, fake, {"ETag": f'"{fake.sha256}"'})

    def _serve_bytes(self, method: str, fake: FakeFile, extra_headers: dict[str, str]) -> None:
        hub = self.server.hub
        failures = hub.failures
        data = fake.data
        if fake.path in failures.corrupt:
            data = bytes(b ^ 0xFF for b in data[:64]) + data[64:]
        extra = failures.served_extra.get(fake.path, 0)
        if extra > 0:
            data = data + b"\0" * extra
        elif extra < 0:
            data = data[:extra]
        total = len(data)
        start = 0
        range_header = self.headers.get("Range")
        status = 200
        if range_header and not failures.ignore_range:
            spec = range_header.removeprefix("bytes=").split(",")[0]
            first, _, last = spec.partition("-")
            start = int(first or 0)
            end = int(last) if last else total - 1
            if start >= total:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{total}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = data[start : end + 1]
            status = 206
        self.send_response(status)
        for key, value in extra_headers.items():
            self.send_header(key, value)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{start + len(data) - 1}/{total}")
        self.end_headers()
        if method == "HEAD":
            return
        drop_after = None
        with hub._lock:
            queue = failures.drop_after.get(fake.path)
            if queue:
                drop_after = queue.pop(0)
        sent = 0
        pause_at = failures.pause_after.get(fake.path)
        try:
            while sent < len(data):
                chunk = data[sent : sent + hub.chunk_size]
                if pause_at is not None and sent + len(chunk) >= pause_at:
                    chunk = chunk[: max(1, pause_at - sent)]
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    sent += len(chunk)
                    pause_at = None
                    failures.resume.wait(timeout=30)
                    continue
                if drop_after is not None and sent + len(chunk) >= drop_after:
                    self.wfile.write(chunk[: max(0, drop_after - sent)])
                    self.wfile.flush()
                    self._drop()
                    return
                self.wfile.write(chunk)
                sent += len(chunk)
                if failures.chunk_delay_s:
                    self.wfile.flush()
                    time.sleep(failures.chunk_delay_s)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _drop(self) -> None:
        """Close the connection mid-body, as a flaky network does."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # ----- helpers

    def _authorized(self) -> bool:
        auth = self.headers.get("Authorization", "")
        return auth.removeprefix("Bearer ").strip() in self.server.hub.valid_tokens

    @staticmethod
    def _revision_ok(repo: FakeRepo, rev: str) -> bool:
        return unquote(rev) in ("main", repo.commit)

    def _json(self, payload) -> None:
        self._send(200, json.dumps(payload).encode(), "application/json")

    def _send(
        self, status: int, body: bytes, content_type: str, headers: Optional[dict] = None, method: str = "GET"
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if method != "HEAD" and self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str) -> None:
        headers = {"X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        # A POST body we did not read would be taken for the next request on this connection.
        self.close_connection = True
        headers["Connection"] = "close"
        self._send(status, json.dumps({"error": message}).encode(), "application/json", headers)
