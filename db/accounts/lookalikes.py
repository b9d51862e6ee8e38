"""Account names that could pass for others: Unicode's confusables skeleton (UTS #39), scripts, invisibles.

The data is Unicode's own: confusables.txt and Scripts.txt as the `confusable-homoglyphs` package ships them
(JSON, read once). That package stores each confusables.txt line in both directions, so the prototype of a
line is not kept; the skeleton here maps every character of a confusable set (a prototype and the characters
drawn like it) to one member of the set. Two names have the same skeleton exactly when UTS #39's skeleton
(NFD, map each character to its prototype, NFD) would make them equal; only the character standing for the
set may differ from Unicode's prototype. Default-ignorable code points are those of DerivedCoreProperties.txt
(Unicode 15.1; `unicodedata` does not carry the property).
"""

from __future__ import annotations

import bisect
import json
import unicodedata
from functools import cache
from importlib import resources

# DerivedCoreProperties.txt, Default_Ignorable_Code_Point (Unicode 15.1): rendered as nothing.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
# Drawn as blank although not default-ignorable (and not a separator, which check_username refuses already).
BLANK = frozenset({0x2800, 0x3000, 0x1D159})
# Scripts that one name may mix (UTS #39 "highly restrictive"): Japanese, Chinese with Bopomofo, Korean.
MIXABLE = (
    frozenset({"HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"HAN", "BOPOMOFO"}),
    frozenset({"HAN", "HANGUL"}),
)
NO_SCRIPT = frozenset({"COMMON", "INHERITED", "UNKNOWN"})
FORMULA_STARTS = "=+-@"
# Cyrillic and Greek letters drawn like Latin ones in common fonts, case-folded, where confusables.txt maps them
# elsewhere or not at all (Cyrillic palochka ӏ is an l on screen; confusables.txt makes it an i): applied before
# the skeleton, so both rules hold.
EXTRA_LOOK_ALIKES = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "һ": "h",
        "н": "h",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "к": "k",
        "ӏ": "l",
        "м": "m",
        "о": "o",
        "р": "p",
        "ԛ": "q",
        "ѕ": "s",
        "т": "t",
        "у": "y",
        "х": "x",
        "ԁ": "d",
        "ԝ": "w",
        "с": "c",
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "μ": "m",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
    }
)
# what a spreadsheet runs as a formula when a cell starts with it


def _data(name: str) -> dict:
    return json.loads(resources.files("confusable_homoglyphs").joinpath(name).read_text(encoding="utf-8"))


@cache
def _skeleton_table() -> dict[int, str]:
    """Code point → the string standing for its confusable set (for str.translate)."""
    pairs = _data("confusables.json")
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    degree: dict[str, int] = {}
    for char, others in pairs.items():
        for other in others:
            parent[root(char)] = root(other["c"])
            degree[char] = degree.get(char, 0) + 1
    sets: dict[str, list[str]] = {}
    for member in parent:
        sets.setdefault(root(member), []).append(member)
    table: dict[int, str] = {}
    for members in sets.values():
        # The prototype is the member every other one points at (most entries); a two-member set keeps the
        # longer string (a prototype may be several characters, a source is one), else the plainer one.
        head = max(members, key=lambda m: (degree.get(m, 0), len(m), m.isascii(), -ord(m[0])))
        for member in members:
            if len(member) == 1 and member != head:
                table[ord(member)] = head
    return table


def skeleton(text: str) -> str:
    """UTS #39 skeleton: NFD, each character replaced by its confusable set's prototype, NFD again."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", text).translate(_skeleton_table()))


def name_key(username: str) -> str:
    """What two account names are compared by: NFKC, then skeleton and case folding until neither changes,
    so `LEA`, fullwidth `ｌｅａ`, `lеa` with a Cyrillic е, `ɑna` with a Latin alpha and Cherokee `Ꭺna` are all
    one name with `lea` or `ana`."""
    key = unicodedata.normalize("NFKC", username)
    for _ in range(4):
        nxt = skeleton(key.casefold().translate(EXTRA_LOOK_ALIKES)).casefold()
        if nxt == key:
            break
        key = nxt
    return key


@cache
def _script_ranges() -> tuple[list[int], list[tuple[int, str]]]:
    data = _data("categories.json")
    aliases = data["iso_15924_aliases"]
    ranges = sorted((lo, hi, aliases[alias]) for lo, hi, alias, _ in data["code_points_ranges"])
    return [lo for lo, _, _ in ranges], [(hi, alias) for _, hi, alias in ranges]


def script_of(ch: str) -> str:
    """Unicode's script of one character (Scripts.txt): LATIN, CYRILLIC, HAN, COMMON, …"""
    starts, ends = _script_ranges()
    i = bisect.bisect_right(starts, ord(ch)) - 1
    if i < 0 or ends[i][0] < ord(ch):
        return "UNKNOWN"
    return ends[i][1]


def scripts(name: str) -> set[str]:
    """The scripts of `name`'s characters (NFKC), Common and Inherited (digits, marks, punctuation) left out."""
    return {script_of(ch) for ch in unicodedata.normalize("NFKC", name)} - NO_SCRIPT


def mixes_scripts(name: str) -> bool:
    """Whether `name` mixes scripts that one name may not (Japanese, Chinese and Korean combinations may)."""
    found = scripts(name)
    return len(found) > 1 and not any(found <= allowed for allowed in MIXABLE)


def is_default_ignorable(ch: str) -> bool:
    """Whether `ch` is a Default_Ignorable_Code_Point (drawn as nothing)."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in DEFAULT_IGNORABLE)


def hidden_character(name: str) -> str | None:
    """The first character of `name` that a reader cannot see or tell apart: default-ignorable, blank, or a
    combining mark with no letter or digit to sit on; None when every character shows."""
    previous_base = False
    for ch in name:
        category = unicodedata.category(ch)
        if is_default_ignorable(ch) or ord(ch) in BLANK:
            return ch
        if category in ("Mn", "Me", "Mc"):
            if not previous_base:
                return ch
            continue
        previous_base = category[0] in ("L", "N")
    return None
