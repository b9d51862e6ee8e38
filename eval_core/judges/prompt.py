"""A model judge's prompt and its answer: build the prompt from a template and the guideline in force, and
read exactly one final grade back — anything else is refused, never guessed.

The template is plain text with `{{placeholder}}` slots (PLACEHOLDERS); it is versioned by the SHA-256 of its
bytes, and that version is stamped on every grade it produced. The prompt holds only the guideline, the query
and the fragment: a model judge never sees another annotator's grade. Their fences carry `{{boundary}}`, a
random mark drawn per call, so a fragment cannot close its fence and speak outside it; a template without the
slot gets every run of `===` in those texts broken up instead.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

# What a template may refer to; query, fragment and guideline are required.
PLACEHOLDERS = {
    "guideline": "the project's guideline text in force",
    "query": "the query text",
    "fragment": "the fragment's title (if any) and text",
    "grades": "one line per grade of the scale: `g = label`",
    "min": "the lowest grade",
    "max": "the highest grade",
    "boundary": "a random mark drawn per call, for the fences around guideline, query and fragment",
}
REQUIRED_PLACEHOLDERS = ("guideline", "query", "fragment")
_SLOT = re.compile(r"\{\{\s*([A-Za-z_]+)\s*\}\}")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_MARKUP = re.compile(r"[*_`#>]")
_GRADE_LINE = re.compile(r"^(?:final\s+)?(?:grade|score)\s*[:=]\s*(.*)$", re.IGNORECASE)
_INTEGER = re.compile(r"[+-]?\d+")
_FENCE_RUN = re.compile(r"={3,}")


@dataclass(frozen=True)
class Answer:
    """What a chat model said for one pair, with the tokens it cost (the usage fields of the response)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


def prompt_version(template: str) -> str:
    """The template's version: SHA-256 of its UTF-8 bytes, so any edit is a new version."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def check_template(template: str) -> str:
    """The template, or ValueError naming an unknown slot or a missing required one."""
    used = {m.group(1) for m in _SLOT.finditer(template)}
    unknown = sorted(used - PLACEHOLDERS.keys())
    if unknown:
        raise ValueError(
            f"unknown placeholder(s) {', '.join('{{' + u + '}}' for u in unknown)}; "
            f"known: {', '.join('{{' + p + '}}' for p in PLACEHOLDERS)}"
        )
    missing = [p for p in REQUIRED_PLACEHOLDERS if p not in used]
    if missing:
        raise ValueError(f"the prompt must contain {', '.join('{{' + m + '}}' for m in missing)}")
    return template


def fragment_text(title: str | None, text: str) -> str:
    """What the judge reads as the fragment: its title (when it has one) above its text."""
    return f"{title.strip()}\n\n{text}" if title and title.strip() else text


def new_boundary(*texts: str) -> str:
    """A random mark (64 bits, hex) found in none of `texts`."""
    while True:
        mark = secrets.token_hex(8)
        if not any(mark in t for t in texts):
            return mark


def _defuse(text: str) -> str:
    """`===` runs broken into `= = =`, for templates whose fences carry no boundary."""
    return _FENCE_RUN.sub(lambda m: " ".join(m.group(0)), text)


def render(
    template: str, query: str, fragment: str, guideline: str, labels: Mapping[int, str], boundary: str | None = None
) -> str:
    """The prompt for one pair, in one pass over the template, so text that looks like `{{query}}` inside a
    query, fragment or guideline is left as written. `boundary` (default: a fresh random mark) fills
    `{{boundary}}`; without that slot, fence-like `===` runs in the texts are broken up."""
    grades = sorted(labels)
    guideline = guideline.strip()
    if "boundary" not in {m.group(1) for m in _SLOT.finditer(template)}:
        query, fragment, guideline = _defuse(query), _defuse(fragment), _defuse(guideline)
    values = {
        "guideline": guideline,
        "query": query,
        "fragment": fragment,
        "grades": "\n".join(f"{g} = {labels[g]}" for g in reversed(grades)),
        "min": str(grades[0]),
        "max": str(grades[-1]),
        "boundary": boundary or new_boundary(query, fragment, guideline),
    }
    return _SLOT.sub(lambda m: values[m.group(1)], check_template(template))


def input_hash(query: str, fragment: str, guideline: str, labels: Mapping[int, str], params: Mapping) -> str:
    """What one judgment depends on besides the model and template: a change to any of it means a new call."""
    data = [query, fragment, guideline, sorted((int(g), str(t)) for g, t in labels.items()), dict(params)]
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def parse_grade(answer: str, scale: tuple[int, int]) -> int:
    """The one final grade of an answer, or ValueError saying why not.

    Accepted: exactly one line `Grade: N` (also `Final grade:`, `Score:`, `=` for `:`, Markdown emphasis
    around it, a full stop after N), or an answer that is nothing but the integer N; N must be an integer on
    the scale. Reasoning
    inside <think>…</think> is ignored. Two grade lines (even equal ones), a fraction, a range or a word are
    refused: a guessed grade would enter the golden set as if the model had given it."""
    text = _THINK.sub("", answer or "")
    lines = [_MARKUP.sub("", line).strip() for line in text.splitlines()]
    found = [m.group(1).strip() for m in map(_GRADE_LINE.match, lines) if m]
    if not found:
        bare = [line for line in lines if line]
        if len(bare) == 1 and _INTEGER.fullmatch(bare[0]):
            found = bare
        else:
            raise ValueError("no 'Grade: N' line in the answer")
    if len(found) > 1:
        raise ValueError(
            f"{len(found)} grade lines in the answer ({', '.join(map(repr, found))}); exactly one is accepted"
        )
    value = found[0].rstrip(".").strip()
    if not _INTEGER.fullmatch(value):
        raise ValueError(f"grade {found[0]!r} is not an integer")
    grade = int(value)
    if not scale[0] <= grade <= scale[1]:
        raise ValueError(f"grade {grade} is outside the scale {scale[0]}-{scale[1]}")
    return grade
