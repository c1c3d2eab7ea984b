"""Sphinx extension: the project's addresses and release, written once in ``pyproject.toml``, on the pages.

``pyproject.toml`` holds them: ``[project] version`` and ``[project.urls]`` ``Repository`` and ``Documentation``
(the checker reads ``Documentation`` for its finding links). The pre-commit hook ids come from
``.pre-commit-hooks.yaml``. Nothing here types any of them; the pages use:

``.. project-install::``
    the ``pip install`` command that installs the checker from the repository at its release tag
    (``pip install git+<Repository>@v<version>``), as a console block a reader can paste;
``.. project-pre-commit::``
    the ``.pre-commit-config.yaml`` entry that runs the first hook of ``.pre-commit-hooks.yaml``, naming the
    repository and the release tag (``rev: v<version>``);
``:project-url:`Repository```
    a link to one address of ``[project.urls]``, the address as its text.

A missing key or an unknown name fails the build, naming ``pyproject.toml`` or the page and line.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective, SphinxRole

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = ROOT / "pyproject.toml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"


def project() -> dict[str, Any]:
    """``{"name": "lightning-migrate", "version": "0.1.0", "urls": {"Repository": ..., "Documentation": ...}}``
    from ``pyproject.toml`` (``name`` is ``""`` when it has none).

    Raises:
        ExtensionError: naming the file and the missing key.
    """
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8")).get("project", {})
    for key in ("version", "urls"):
        if key not in data:
            raise ExtensionError(f"{PYPROJECT}: [project] has no {key!r}")
    if "Repository" not in data["urls"]:
        raise ExtensionError(f"{PYPROJECT}: [project.urls] has no 'Repository'")
    return {"name": data.get("name", ""), "version": data["version"], "urls": dict(data["urls"])}


def release_tag() -> str:
    """The git tag of this release: ``v`` and ``[project] version``."""
    return f"v{project()['version']}"


def install_requirement() -> str:
    """``git+<Repository>@<tag>``: what pip installs this release from."""
    return f"git+{project()['urls']['Repository']}@{release_tag()}"


def install_command() -> str:
    """``pip install git+<Repository>@<tag>``."""
    return f"pip install {install_requirement()}"


def pre_commit_config() -> str:
    """The ``.pre-commit-config.yaml`` text that runs the first hook of ``.pre-commit-hooks.yaml`` at this release.

    Raises:
        ExtensionError: ``.pre-commit-hooks.yaml`` declares no hook.
    """
    hooks = yaml.safe_load(HOOKS.read_text(encoding="utf-8")) or []
    if not hooks:
        raise ExtensionError(f"{HOOKS}: no hook declared")
    return "\n".join(
        [
            "repos:",
            f"  - repo: {project()['urls']['Repository']}",
            f"    rev: {release_tag()}",
            "    hooks:",
            f"      - id: {hooks[0]['id']}",
        ]
    )


class _Snippet(SphinxDirective):
    has_content = False
    language = ""

    def text(self) -> str:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        for path in (PYPROJECT, HOOKS):
            self.env.note_dependency(str(path))
        text = self.text()
        block = nodes.literal_block(text, text, language=self.language)
        self.set_source_info(block)
        return [block]


class InstallDirective(_Snippet):
    """``.. project-install::`` -- :func:`install_command` as a console block."""

    language = "console"

    def text(self) -> str:
        return f"$ {install_command()}"


class PreCommitDirective(_Snippet):
    """``.. project-pre-commit::`` -- :func:`pre_commit_config` as a YAML block."""

    language = "yaml"

    def text(self) -> str:
        return pre_commit_config()


class ProjectUrlRole(SphinxRole):
    """``:project-url:`Repository``` -- a link to that address of ``[project.urls]``."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        self.env.note_dependency(str(PYPROJECT))
        urls = project()["urls"]
        if self.text not in urls:
            message = self.inliner.reporter.error(
                f"no {self.text!r} in [project.urls] of {PYPROJECT} (it has {sorted(urls)})", line=self.lineno
            )
            return [nodes.problematic(self.rawtext, self.rawtext)], [message]
        return [nodes.reference(self.rawtext, urls[self.text], refuri=urls[self.text])], []


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("project-install", InstallDirective)
    app.add_directive("project-pre-commit", PreCommitDirective)
    app.add_role("project-url", ProjectUrlRole())
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
