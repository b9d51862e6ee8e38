"""Helpers the tests share (one definition each): files written into a test's tmp_path."""

from __future__ import annotations

import json
from pathlib import Path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    """Records as JSON lines (UTF-8, non-ASCII kept as typed), the shape every qrelkit importer reads."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path
