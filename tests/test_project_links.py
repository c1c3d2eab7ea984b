"""The project's addresses and release are written once, in pyproject.toml, and the pages render them from there
(docs/_ext/build_mechanics/project_links.py)."""

from __future__ import annotations

import html
import re
import tomllib

import pytest
import yaml
from build_mechanics import project_links
from builds import ROOT
from sphinx.errors import ExtensionError

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
HOOK_IDS = [hook["id"] for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))]


def test_pyproject_names_the_repository_and_the_site():
    assert PYPROJECT["urls"]["Repository"].startswith("https://github.com/")
    assert PYPROJECT["urls"]["Documentation"].startswith("https://")


def test_the_install_command_and_the_pre_commit_entry_come_from_pyproject(tmp_path, monkeypatch):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nversion = "3.1.4"\n[project.urls]\nRepository = "https://example.org/r"\n')
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text("- id: first-hook\n  entry: x\n- id: second\n  entry: y\n")
    monkeypatch.setattr(project_links, "PYPROJECT", pyproject)
    monkeypatch.setattr(project_links, "HOOKS", hooks)
    assert project_links.install_command() == "pip install git+https://example.org/r@v3.1.4"
    assert yaml.safe_load(project_links.pre_commit_config()) == {
        "repos": [{"repo": "https://example.org/r", "rev": "v3.1.4", "hooks": [{"id": "first-hook"}]}]
    }
    pyproject.write_text('[project]\nversion = "3.1.4"\n[project.urls]\nDocumentation = "https://example.org/d"\n')
    with pytest.raises(ExtensionError, match=r"pyproject\.toml: \[project.urls\] has no 'Repository'"):
        project_links.install_command()


def page_text(site, docname: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", site.page(docname)))


def test_the_pages_install_from_the_repository_at_the_release_tag(site):
    command = f"pip install git+{PYPROJECT['urls']['Repository']}@v{PYPROJECT['version']}"
    for docname in ("index", "checker/cli"):
        assert f"$ {command}" in page_text(site, docname), docname
    [block] = re.findall(
        r'<div class="highlight-yaml notranslate"><div class="highlight"><pre>(.*?)</pre>',
        site.page("checker/cli"),
        flags=re.S,
    )
    config = yaml.safe_load(html.unescape(re.sub(r"<[^>]+>", "", block)))
    assert config == {
        "repos": [
            {"repo": PYPROJECT["urls"]["Repository"], "rev": f"v{PYPROJECT['version']}", "hooks": [{"id": HOOK_IDS[0]}]}
        ]
    }
    assert "<URL" not in page_text(site, "checker/cli")
