"""Errors a user can fix; the CLI prints their one-line message and exits 2."""

from __future__ import annotations


class UsageError(Exception):
    """Something the user asked for that cannot be done as asked; the message says what to fix."""
