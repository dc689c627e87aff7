"""The loaded model as Ollama's clients read it: its /api/tags and /api/ps entry, /api/show's description, and
which names a request may give it.

Ollama names a model `name:tag`; SpecChat's model is named by its file (app.serve.jobs.model_id), so a client may
send that id bare or with the `:latest` tag Ollama's clients add. The facts come from the GGUF header (read once
per file version by app.engine.gguf.info). `digest` names the file as it is now (its path, size and time), not its
bytes: hashing gigabytes on every listing would keep clients waiting.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from app.common.units import format_parameter_count
from app.engine.errors import ModelFileError
from app.engine.gguf.info import ModelInfo, inspect_gguf
from app.engine.gguf.mmproj import mmproj_beside
from app.engine.reasoning.markers import THINK, markers_for
from app.serve.errors import BadRequest
from app.serve.jobs import ServedModels

# The Ollama version /api/version reports. Clients compare it before they use newer features (the VS Code and
# Zed providers ask for thinking and tool support that came with 0.9 and later): this server answers the fields
# of the 0.12 API, so it says so.
OLLAMA_VERSION = "0.12.6"
TAG = "latest"


@dataclass(frozen=True)
class ModelFacts:
    """What Ollama's listings say about the loaded model."""

    name: str  # "<id>:latest", as Ollama's listings name a model
    size: int = 0  # bytes on disk
    digest: str = ""
    modified_at: str = ""
    architecture: str = ""
    parameter_size: str = ""
    quantization: str = ""
    context_length: int = 0  # what this server gives a request: the loaded context, within the model's own
    template: str = ""
    capabilities: tuple[str, ...] = ("completion",)
    metadata: dict[str, object] = field(default_factory=dict)


def timestamp(when: Optional[float] = None) -> str:
    """RFC 3339 in UTC, as Ollama writes `created_at` and `modified_at`."""
    moment = datetime.fromtimestamp(when, timezone.utc) if when is not None else datetime.now(timezone.utc)
    return moment.isoformat().replace("+00:00", "Z")


def check_name(name: object, served: ServedModels) -> str:
    """The model name a request gave, when it is the loaded model's; else a BadRequest in Ollama's words (404)."""
    if not isinstance(name, str) or not name:
        raise BadRequest('"model" is required: the name /api/tags lists.')
    if not served.target:
        raise BadRequest("No model is loaded; load one in SpecChat (or start serve with --target).", 503)
    bare, _, tag = name.partition(":")
    if bare != served.target or tag not in ("", TAG):
        raise BadRequest(f"model '{name}' not found", 404)
    return name


def model_facts(served: ServedModels) -> ModelFacts:
    """The loaded model's facts; a server's model (no file) or an unreadable file gets its name alone."""
    name = f"{served.target}:{TAG}"
    if not served.path:
        return ModelFacts(name, digest=_digest(name), modified_at=timestamp(), context_length=served.n_ctx)
    path = Path(served.path)
    try:
        info = inspect_gguf(path)
        stat = path.stat()
    except (ModelFileError, OSError):
        return ModelFacts(name, digest=_digest(name), modified_at=timestamp(), context_length=served.n_ctx)
    trained = info.context_length or served.n_ctx
    return ModelFacts(
        name,
        size=info.file_size,
        digest=_digest(f"{os.path.abspath(path)}:{stat.st_size}:{stat.st_mtime_ns}"),
        modified_at=timestamp(stat.st_mtime),
        architecture=info.architecture,
        parameter_size=format_parameter_count(info.parameter_count),
        quantization=info.quantization,
        context_length=min(trained, served.n_ctx) if served.n_ctx else trained,
        template=info.chat_template or "",
        capabilities=_capabilities(info, served.projector or mmproj_beside(path) is not None),
        metadata=info.metadata,
    )


def _digest(identity: str) -> str:
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()


def _capabilities(info: ModelInfo, pictures: bool) -> tuple[str, ...]:
    """Ollama's capability words: what the template teaches (tools, thinking), fill-in-the-middle tokens (insert),
    a projector (vision)."""
    template = info.chat_template or ""
    found = ["completion"]
    if "tools" in template:
        found.append("tools")
    if "tokenizer.ggml.fim_pre_token_id" in info.metadata:
        found.append("insert")
    if pictures:
        found.append("vision")
    family = markers_for(template)[0]
    if family is not THINK or THINK.start in template:
        found.append("thinking")
    return tuple(found)


def details(facts: ModelFacts) -> dict:
    families = [facts.architecture] if facts.architecture else None
    return {
        "parent_model": "",
        "format": "gguf",
        "family": facts.architecture,
        "families": families,
        "parameter_size": facts.parameter_size,
        "quantization_level": facts.quantization,
    }


def tag_entry(facts: ModelFacts) -> dict:
    """The model's entry in /api/tags."""
    return {
        "name": facts.name,
        "model": facts.name,
        "modified_at": facts.modified_at,
        "size": facts.size,
        "digest": facts.digest,
        "details": details(facts),
    }


def running_entry(facts: ModelFacts) -> dict:
    """The model's entry in /api/ps: loaded until the server stops (it is never unloaded for idleness)."""
    return {
        **tag_entry(facts),
        "expires_at": "0001-01-01T00:00:00Z",
        "size_vram": 0,
        "context_length": facts.context_length,
    }


def show_reply(facts: ModelFacts) -> dict:
    """/api/show: details, capabilities, the header's plain values as model_info, and the chat template."""
    info: dict[str, object] = {
        key: value for key, value in facts.metadata.items() if isinstance(value, (str, int, float, bool))
    }
    info.pop("tokenizer.chat_template", None)  # it is `template`
    if facts.architecture:
        info["general.architecture"] = facts.architecture
        info[f"{facts.architecture}.context_length"] = facts.context_length
    return {
        "license": "",
        "modelfile": f"# SpecChat serves this model; it has no Modelfile.\nFROM {facts.name}\n",
        "parameters": "",
        "template": facts.template,
        "details": details(facts),
        "model_info": info,
        "capabilities": list(facts.capabilities),
        "modified_at": facts.modified_at,
    }
