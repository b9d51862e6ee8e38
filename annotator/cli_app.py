"""CLI commands (placeholder registration until this group is built)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this group's commands to the `qrelkit` parser."""
