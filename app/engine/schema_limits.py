"""How far a JSON schema may expand as a grammar: checked before llama-cpp-python's converter or llama.cpp sees it.

The converter writes a bounded repetition (a string's minLength/maxLength, an array's minItems/maxItems, a pattern's
{m,n}) as one group nested inside the next, one level per repetition, and builds that text in memory first: a
maxLength of 10^5 nests 10^5 levels, and llama.cpp's grammar parser, which recurses once per level, dies of a stack
overflow (SIGSEGV) with every request in flight; a maxLength of 10^9 is gigabytes of text before the parser is
reached. So the schema is walked first, without recursion (its depth, its size, each repetition count and their
sum, each object's properties, enums, patterns), and the grammar text the converter writes is checked again (its
size and its nesting) before llama.cpp reads it. The API (app.serve), `generate --json-schema` and the engine
itself (app.engine.local.grammar) use these two checks, so the window's API, the CLI and `serve` share one bound.

Each check returns the problem as one sentence naming where in the schema it lies, or None.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

# The most a repetition may count (a maxLength, a maxItems, a pattern's {m,n}), and all of them together; one level
# of grammar nesting each (docs/grammar-limits.md has the measurements). llama.cpp's own {m,n} stops at 2000.
MAX_REPEAT = 1000
MAX_REPEAT_TOTAL = 20_000
# Containers nested in a schema (a request body nests 64 at most, of which the schema's path takes a few).
MAX_SCHEMA_DEPTH = 40
# Values in a schema; properties of one object, and of all (the converter's work grows with the square of an
# object's optional properties: 8 objects of 125 take it under a second, 38 of 255 took 17 s).
MAX_SCHEMA_VALUES = 20_000
MAX_PROPERTIES = 128
MAX_PROPERTIES_TOTAL = 1000
# enum values in the whole schema, and the characters of all enum and const values: each is an alternative the
# grammar tries at every token (OpenAI's structured outputs allow 1,000 and about 120,000).
MAX_ENUM_VALUES = 1000
MAX_LITERAL_CHARS = 120_000
# A pattern's characters and its groups nested.
MAX_PATTERN_CHARS = 1000
MAX_PATTERN_NESTING = 32
# The grammar text the converter wrote: its size, and its groups nested (each a recursion of llama.cpp's parser):
# a repetition's groups, and a pattern's, with room to spare.
MAX_GRAMMAR_CHARS = 2 << 20
MAX_GRAMMAR_NESTING = MAX_REPEAT + MAX_PATTERN_NESTING + 64

REPEAT_KEYS = (("minLength", "maxLength"), ("minItems", "maxItems"))
# Keywords whose value is a schema, a list of schemas, or an object of named schemas.
_ONE_SCHEMA = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_NAMED_SCHEMAS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_QUANTIFIER = re.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")


def _count(value: Any) -> Optional[int]:
    """A repetition count as JSON gives it: a whole number of 0 or more (true is not one), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class _Walk:
    """One schema walked: the running totals the whole schema shares."""

    def __init__(self) -> None:
        self.values = 0
        self.properties = 0
        self.repeats = 0
        self.enum_values = 0
        self.literal_chars = 0

    def repeat(self, path: str, count: int) -> Optional[str]:
        if count > MAX_REPEAT:
            return (
                f"{path} is {count}; a grammar counts to at most {MAX_REPEAT} (leave it out for any "
                "length, or lower it)."
            )
        self.repeats += count
        if self.repeats > MAX_REPEAT_TOTAL:
            return (
                f"{path} brings the schema's repetition counts to more than {MAX_REPEAT_TOTAL} in all; "
                "lower them or leave some out."
            )
        return None

    def schema(self, node: dict, path: str) -> Optional[str]:
        """The keywords of one schema object that the converter expands."""
        for low_key, high_key in REPEAT_KEYS:
            for key in (low_key, high_key):
                if key in node and _count(node[key]) is None:
                    return f"{path}.{key} must be a whole number of 0 or more."
            low, high = node.get(low_key, 0), node.get(high_key)
            # The minimum is written out once per count, the rest as groups nested one per count.
            problem = self.repeat(f"{path}.{low_key}", low) if low else None
            if problem is None and high is not None:
                if high < low:
                    return f"{path}.{high_key} is less than its {low_key}."
                problem = self.repeat(f"{path}.{high_key}", high - low)
            if problem:
                return problem
        properties = node.get("properties")
        if isinstance(properties, dict):
            if len(properties) > MAX_PROPERTIES:
                return (
                    f"{path}.properties has {len(properties)} properties; a schema may give at most "
                    f"{MAX_PROPERTIES} to one object."
                )
            self.properties += len(properties)
            if self.properties > MAX_PROPERTIES_TOTAL:
                return f"{path}.properties brings the schema's properties to more than {MAX_PROPERTIES_TOTAL}."
        enum = node.get("enum")
        if enum is not None:
            if not isinstance(enum, list):
                return f"{path}.enum must be a list."
            self.enum_values += len(enum)
            if self.enum_values > MAX_ENUM_VALUES:
                return f"{path}.enum brings the schema's enum values to more than {MAX_ENUM_VALUES}."
        for key in ("enum", "const"):
            if key in node:
                try:
                    self.literal_chars += len(json.dumps(node[key]))
                except (RecursionError, ValueError):
                    return f"{path}.{key} nests deeper than {MAX_SCHEMA_DEPTH} levels."
                if self.literal_chars > MAX_LITERAL_CHARS:
                    return (
                        f"{path}.{key} brings the schema's enum and const values to more than "
                        f"{MAX_LITERAL_CHARS} characters."
                    )
        pattern = node.get("pattern")
        return self.pattern(pattern, f"{path}.pattern") if pattern is not None else None

    def pattern(self, pattern: Any, path: str) -> Optional[str]:
        if not isinstance(pattern, str):
            return f"{path} must be a string."
        if len(pattern) > MAX_PATTERN_CHARS:
            return f"{path} has {len(pattern)} characters; a pattern may have at most {MAX_PATTERN_CHARS}."
        if group_nesting(pattern) > MAX_PATTERN_NESTING:
            return f"{path} nests groups more than {MAX_PATTERN_NESTING} deep."
        for match in _QUANTIFIER.finditer(pattern):
            low, high = (int(n) if n else 0 for n in (match.group(1), match.group(2) or match.group(1)))
            problem = self.repeat(f"{path} {match.group(0)}", max(low, high))
            if problem:
                return problem
        return None


def schema_problem(schema: Any, where: str = "the schema") -> Optional[str]:
    """Why `schema` would expand to a grammar too large for llama.cpp (or for the converter's time and memory), in one
    sentence that names the place by `where` (the field that holds the schema) and the path inside it; None when
    it is within the bounds. The converter's own complaints (a feature it lacks) come later, from the engine."""
    return schemas_problem({where: schema})


def schemas_problem(schemas: dict[str, Any]) -> Optional[str]:
    """schema_problem for schemas that become one grammar (the offered tools' parameters of a forced call), by
    the field that holds each: their totals count together."""
    for where, schema in schemas.items():
        if not isinstance(schema, dict):
            return f"{where} must be a JSON schema object."
    walk = _Walk()
    # (value, its path, containers above it, whether it is a schema rather than data such as an enum's values)
    stack: list[tuple[Any, str, int, bool]] = [(schema, where, 1, True) for where, schema in schemas.items()]
    while stack:
        value, path, depth, is_schema = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        walk.values += len(value)
        if walk.values > MAX_SCHEMA_VALUES:
            return f"{path} holds more than {MAX_SCHEMA_VALUES} values in all; a schema to decode under is smaller."
        if depth > MAX_SCHEMA_DEPTH:
            return f"{path} nests deeper than {MAX_SCHEMA_DEPTH} levels."
        if is_schema and isinstance(value, dict):
            problem = walk.schema(value, path)
            if problem:
                return problem
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            name = f"{path}[{key}]" if isinstance(value, list) else f"{path}.{_shown(key)}"
            if not is_schema:
                child_is_schema = False
            elif isinstance(value, list):  # a list of schemas (anyOf, prefixItems, ...) reached as a schema
                child_is_schema = True
            elif key in _ONE_SCHEMA or key in _SCHEMA_LISTS:
                child_is_schema = True
            elif key in _NAMED_SCHEMAS and isinstance(item, dict):
                for prop, sub in item.items():
                    stack.append((sub, f"{name}.{_shown(prop)}", depth + 2, True))
                walk.values += len(item)
                continue
            else:
                child_is_schema = False
            stack.append((item, name, depth + 1, child_is_schema))
    return None


def _shown(key: Any) -> str:
    text = str(key)
    text = text if text.isascii() and text.isprintable() else "?"
    return text if len(text) <= 40 else text[:37] + "..."


def group_nesting(text: str, opaque: str = "[]", comment: str = "") -> int:
    """The deepest groups nest in `text`: its parentheses, outside escapes (a backslash and what follows it), the
    spans `opaque` names as pairs of opening and closing characters, and a `comment` character's line. A regular
    expression's brackets are opaque ("[]"); GBNF's literals and brackets ('""[]') and its # comments (GBNF has no
    backslash outside those, so the escape rule changes nothing there)."""
    deepest = depth = 0
    closers = dict(zip(opaque[::2], opaque[1::2]))
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c in closers:
            close = closers[c]
            i += 1
            while i < n and text[i] != close:
                i += 2 if text[i] == "\\" else 1
        elif comment and c == comment:
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth = max(0, depth - 1)
        i += 1
    return deepest


def grammar_problem(gbnf: str) -> Optional[str]:
    """Why llama.cpp must not read the grammar text `gbnf` (too large, or nested deeper than its parser's recursion
    is known to survive), in one sentence, or None."""
    if len(gbnf) > MAX_GRAMMAR_CHARS:
        return (
            f"The grammar for this schema would take {len(gbnf):,} characters; at most {MAX_GRAMMAR_CHARS:,} "
            "are read (lower the schema's repetition counts, or leave some out)."
        )
    if grammar_nesting(gbnf) > MAX_GRAMMAR_NESTING:
        return (
            f"The grammar for this schema would nest groups more than {MAX_GRAMMAR_NESTING} deep (lower the "
            "schema's repetition counts, or leave some out)."
        )
    return None


def grammar_nesting(gbnf: str) -> int:
    """The deepest groups nest in GBNF text: parentheses outside "literals", [character classes] and # comments."""
    return group_nesting(gbnf, '""[]', "#")
