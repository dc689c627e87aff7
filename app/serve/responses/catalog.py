"""What Codex CLI reads about a model, served in /v1/models' `models` list beside OpenAI's `data`.

Codex asks no custom provider what its models are: it looks the model's name up in its own catalog, and for a name
it does not know it warns "Model metadata for `...` not found" and guesses (a context window not this server's,
tools the model may not take). Its config's `model_catalog_json` names a file of its own shape, `{"models": [...]}`,
and /v1/models answers in that shape too (serde reads past OpenAI's fields), so the file is what the server says:
`curl .../v1/models > specchat-models.json` (docs/api.md, "Codex CLI").
"""

from __future__ import annotations

# Codex's prompt for a model it knows (its catalog's `base_instructions`, required there): Codex's own long one is
# written for large models, and a small context fills with it, so the server's is short.
BASE_INSTRUCTIONS = (
    "You are a coding agent working in the user's repository through the tools you are given. Look at files with "
    "the shell tool, change them with apply_patch, and run commands to check what you did. When the task is done, "
    "say in a sentence or two what you changed."
)
# The share of a tool's output that Codex keeps in the conversation, in tokens: small, as a small context needs.
TOOL_OUTPUT_TOKENS = 2000


def codex_models(target: str, n_ctx: int) -> list[dict]:
    """The loaded target as Codex's model catalog describes a model (none without one)."""
    if not target:
        return []
    return [
        {
            "slug": target,
            "display_name": target,
            "description": "A local model served by SpecChat, speculating with its draft.",
            "default_reasoning_level": None,
            "supported_reasoning_levels": [],
            "shell_type": "shell_command",
            "visibility": "list",
            "supported_in_api": True,
            "priority": 1,
            "upgrade": None,
            "base_instructions": BASE_INSTRUCTIONS,
            "supports_reasoning_summaries": False,
            "support_verbosity": False,
            "default_verbosity": None,
            "apply_patch_tool_type": "freeform",
            "truncation_policy": {"mode": "tokens", "limit": TOOL_OUTPUT_TOKENS},
            "supports_parallel_tool_calls": False,
            "context_window": n_ctx,
            "experimental_supported_tools": [],
            "input_modalities": ["text"],
        }
    ]
