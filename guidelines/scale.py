"""A first guideline for a project on a scale other than the bundled 0–3: the bundled guideline's structure (the
question to ask, the grade table, an invented illustration, the hard boundaries, tie-breaking, can't judge) written for
the project's grades and their names, so annotators of a 1–5 project read a guideline from the start.

Grade names are the lead's text: every ASCII punctuation mark in them is backslash-escaped, so a name shows
literally where the app renders the guideline as Markdown (no emphasis, link, table cell break or math).
"""

from __future__ import annotations

import re

from guidelines import GRADING

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_NOT_RELEVANT = "…is about something else, or only shares words with the query."
_RELATED = "…is on the topic or names the thing asked about, but does not help answer it."
_SOME = (
    "…contains part of the answer, or context the answer cannot be given without (a condition, an exception, "
    "the definition the answer depends on)."
)
_MOST = "…contains nearly all of the answer: one number, condition or case of the query is missing."
_FULL = "…contains the complete answer: a reader could answer the query from this fragment alone."
_NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}


def literal(name: str) -> str:
    """A grade name as Markdown that renders exactly as the name."""
    return _PUNCTUATION.sub(r"\\\1", name)


def _roles(grades: list[int]) -> dict[str, int]:
    """Which grade stands for each kind of fragment of the bundled 0–3 guideline: not relevant (always the
    lowest), related in passing, some of the answer or essential context, nearly all of it, the full answer
    (always the highest). On a short scale several kinds share a grade."""
    low, high = grades[0], grades[-1]
    if len(grades) == 2:
        return {"not": low, "related": low, "some": high, "most": high, "full": high}
    if len(grades) == 3:
        return {"not": low, "related": low, "some": grades[1], "most": grades[1], "full": high}
    return {"not": low, "related": grades[1], "some": grades[2], "most": grades[-2], "full": high}


def _description(grade: int, grades: list[int], labels: dict[int, str]) -> str:
    """What a fragment of `grade` holds, in the bundled guideline's words; a grade between "some" and "nearly
    all" on a long scale is placed between its neighbours."""
    roles = _roles(grades)
    if grade == roles["full"]:
        return (
            _FULL
            if len(grades) > 2
            else (
                "…helps answer the query: it contains the answer, part of it, or "
                "context the answer cannot be given without."
            )
        )
    if grade == roles["not"]:
        if len(grades) == 3:
            return _NOT_RELEVANT[:-1] + ", or only mentions the topic without helping answer it."
        return _NOT_RELEVANT
    if grade == roles["related"]:
        return _RELATED
    if grade == roles["some"]:
        return _SOME
    if grade == roles["most"]:
        return _MOST
    below, above = grade - 1, grade + 1
    return (
        f"…contains part of the answer: more of it than grade {below} ({literal(labels[below])}), less than "
        f"grade {above} ({literal(labels[above])})."
    )


def _section(text: str, heading: str) -> list[str]:
    """The lines of the bundled guideline's section `heading` (the heading line included), up to the next
    heading of the same or a higher level."""
    lines = text.splitlines()
    start = lines.index(heading)
    level = len(heading) - len(heading.lstrip("#"))
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i].startswith("#") and len(lines[i]) - len(lines[i].lstrip("#")) <= level
        ),
        len(lines),
    )
    return lines[start:end]


def _without_last_paragraph(lines: list[str]) -> list[str]:
    """The lines up to the last paragraph (the bundled can't-judge section ends with one written for 0–3)."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    blank = max(i for i, line in enumerate(lines) if not line.strip())
    return lines[: blank + 1]


def scale_guideline(labels: dict[int, str]) -> str:
    """Guideline version 1 for a project whose grades are `labels` (grade → name, every grade of its scale):
    the bundled guideline adapted to the scale, saying that the lowest grade means not relevant."""
    grades = sorted(labels)
    low, high = grades[0], grades[-1]
    if len(grades) < 2 or grades != list(range(low, high + 1)):
        raise ValueError(f"a guideline needs the names of every grade of a scale of two or more, got {grades}")
    bundled = GRADING.read_text(encoding="utf-8")
    roles = _roles(grades)

    def g(role: str) -> str:
        return f"**{roles[role]}**"

    def named(grade: int) -> str:
        return f"**{grade}** ({literal(labels[grade])})"

    intro = bundled.split("\n## ", 1)[0].splitlines()[1:]  # what to ask, under the title
    count = _NUMBERS.get(len(grades), str(len(grades)))
    out = [
        f"# Relevance grading guideline ({low}–{high})",
        *intro,
        "",
        f"## The {count} grades",
        "",
        "| Grade | Name | Use it when the fragment… |",
        "|---|---|---|",
    ]
    out += [
        f"| **{grade}** | {literal(labels[grade])} | {_description(grade, grades, labels)} |"
        for grade in reversed(grades)
    ]
    top = " means **relevant**" if len(grades) == 2 else ", the highest, means the fragment answers the query fully"
    gains = f" Exports to TREC and BEIR qrels write grade − {low} as the gain, so {low} becomes 0 there." if low else ""
    out += [
        "",
        f"{named(low)} is the lowest grade: it means **not relevant**. Every grade above it is relevant "
        f"to some degree; {named(high)}{top}.{gains}",
        "",
    ]
    if high <= 9:
        keys = ", ".join(f"**{grade}**" for grade in grades[:-1]) + f" or **{high}**"
        out += [
            f"Keyboard: press {keys} to grade; the next pair opens at once and the grade is saved the moment "
            "you press the key.",
            "",
        ]
    else:
        out += ["Click the grade's button to grade; the next pair opens at once and the grade is saved.", ""]
    out += [
        "## An illustration",
        "",
        'An invented example (not from any project): for the query *"what time does the museum close on '
        'Sundays?"*, a fragment saying the museum is open on Sundays from 10:00 to 18:00 is a '
        f"{g('full')}; one saying that Sunday hours follow a separate winter timetable from November to March, "
        f'without the times, is a {g("some")} (an answer without it could be wrong); a page listing "opening '
        f"hours\" among its help topics is a {g('related')}; a history of the museum's coin collection is a "
        f"{g('not')}.",
        "",
        "## The hard boundaries",
        "",
    ]
    if roles["related"] != roles["not"]:
        out += [
            f'### {roles["not"]} vs {roles["related"]} — "shares words" vs "on the topic"',
            "",
            "Ask: *is the fragment about the thing the query asks about?*",
            "",
            f"- Yes, it names or discusses it → at least {g('related')}.",
            f"- No, it only shares words with the query → {g('not')}.",
            "",
        ]
    helps_below = roles["related"]
    out += [
        f'### {helps_below} vs {roles["some"]} — "mentions" vs "helps answer"',
        "",
        "Ask: *would the answer be wrong or incomplete without something this fragment says?*",
        "",
        f'- Yes → {g("some")}. Definitions, conditions ("only for orders outside the EU"), exceptions, the '
        "date a period counts from.",
        f"- No, it only names the topic, links to it, or lists it as a heading → {g('related')}.",
        f"- **Tie-breaker:** if you cannot point to a specific sentence that a correct answer would use, give "
        f"{g('related')}.",
        "",
    ]
    if roles["full"] != roles["some"]:
        below_full = high - 1
        out += [
            f'### {below_full} vs {high} — "part" vs "all"',
            "",
            "Ask: *could a reader write the complete answer from this fragment alone?*",
            "",
            f"- Yes, with nothing missing → **{high}**.",
            f"- A number, a condition or a case of the query is missing → **{below_full}**.",
            f'- **Tie-breaker:** if the query has several parts (e.g. "deadline *and* cost") and one is '
            f"missing, give at most **{below_full}**. If the answer is complete but buried in unrelated text, "
            f"it is still **{high}** — length does not lower a grade.",
            "",
        ]
    if roles["most"] - roles["some"] > 1:
        out += [
            f"### Between {roles['some']} and {roles['most']}",
            "",
            "Ask: *how much of the complete answer does the fragment carry?* Each grade up means clearly more "
            "of it; when you cannot say which of two neighbouring grades fits, the tie-breaking rule below "
            "applies.",
            "",
        ]
    out += [
        *_section(bundled, "### General tie-breaking"),
        *_without_last_paragraph(_section(bundled, '## When to use "can\'t judge"')),
        "A hard decision between two neighbouring grades is **not** a reason for can't judge: apply the "
        "tie-breakers above and leave a note.",
    ]
    return "\n".join(out).rstrip() + "\n"
