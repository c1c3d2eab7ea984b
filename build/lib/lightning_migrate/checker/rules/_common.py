"""Helpers of several rules: messages from the registry."""

from __future__ import annotations

from lightning_migrate import registry


def plain(rst: str) -> str:
    """reST inline literals as plain backticks: the registry's text, fit for a terminal."""
    return rst.replace("``", "`")


def removed(pattern_id: str) -> str:
    """``"<old signature> was removed in Lightning <version>: <replacement>"``, from the registry entry."""
    pattern = registry.get(pattern_id)
    return f"`{pattern.old_signature}` was removed in Lightning {pattern.removed_in}: {plain(pattern.replacement)}"
