"""The running Sphinx application, for the guide's directives and roles.

Sphinx 9 deprecates ``BuildEnvironment.app`` (``RemovedInSphinx11Warning``; ``self.env.app`` in a directive), and
the build turns undeclared warnings into errors in the processes it starts, so a directive must not touch it. The
guide's extensions call :func:`remember` in their ``setup`` and their directives call :func:`get`: the application
that loaded them (one per process; Sphinx's parallel readers are forks of it and inherit it).
"""

from __future__ import annotations

from sphinx.application import Sphinx

_app: Sphinx | None = None


def remember(app: Sphinx) -> None:
    """Record ``app`` as the running application (call it from an extension's ``setup``)."""
    global _app
    _app = app


def get() -> Sphinx:
    """The application :func:`remember` recorded last.

    Raises:
        RuntimeError: no extension of the guide was set up in this process.
    """
    if _app is None:
        raise RuntimeError("no Sphinx application: the guide's extensions were not set up in this process")
    return _app
