"""``rewrite_source``: a source with every fix applied, the opt-in rewrites included -- what the scenario matrix
runs for each rewrite shape of ``data/rewrites``."""

from __future__ import annotations

from lightning_migrate.checker.base import MANUAL
from lightning_migrate.checker.core import check_source


class RewriteError(ValueError):
    """A finding that no fix rewrites: ``file:line: CODE why`` for each, one a line."""


def rewrite_source(source: str, filename: str = "<string>") -> str:
    """``source`` after ``lightning-migrate --fix --unsafe-fixes``, every finding rewritten.

    Args:
        source: a Python module's text.
        filename: the name its errors give (a path, or ``<string>``).

    Returns:
        the rewritten text (``source`` itself when nothing is found); running it again changes nothing.

    Raises:
        RewriteError: some finding has no automatic fix (it would only get a marker comment); the message names
            ``filename:line``, the rule and the marker's reason for each.
        SyntaxError: ``source`` does not parse.
    """
    result = check_source(source.encode("utf-8"), fix=True, unsafe_fixes=True)
    left = [finding for finding in result.findings if finding.tier == MANUAL]
    if left:
        raise RewriteError(
            "\n".join(
                f"{filename}:{f.line}: {f.code} cannot be rewritten: {f.fix.description if f.fix else ''}" for f in left
            )
        )
    return source if result.new_source is None else result.new_source.decode("utf-8")
