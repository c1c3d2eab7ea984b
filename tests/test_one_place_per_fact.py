"""Each release number and pin is typed in one place; pages and configuration take it from there.

The places: the releases that deprecated and removed a pattern are the registry's (``src/lightning_migrate/
registry.py``; pages print them with the ``:deprecated-in:`` and ``:removed-in:`` roles); the releases the
compatibility table covers are ``data/compat/matrix.toml``'s (and the records made on them); the Lightning and
torch the site is built with are ``requirements.txt``'s pins (noxfile.py reads the torch pin there).

Checked: the text of every committed page under ``docs/`` (reST and MyST), README.md, and the strings the build's
configuration and extensions hold (``conf.py``, ``docs/_ext``: string literals other than docstrings, which
describe code, not the guide) must not type one of those releases; no file of the project's configuration (the
noxfile, CI, the hosting files, the other requirements files, the docs) types the torch pin. The gallery is
checked later (its scripts print the installed release they ran on).
"""

from __future__ import annotations

import ast
import fnmatch
import re
import tomllib
from pathlib import Path

import pytest
from builds import ROOT, source_files

from lightning_migrate import registry

#: A number that reads as a release (``1.5``, ``2.6.6``), not part of a longer number or a word.
RELEASE = re.compile(r"(?<![\w.])v?(\d+\.\d+(?:\.\d+)?)(?![\w]|\.\d)")
#: A number followed by a unit is a measurement, never a release (``1.9 s``, ``2.0 x``).
UNIT = re.compile(r"\s*(?:s|ms|min|minutes?|h|x|%|GB|MB|KB|B|seconds?|times)\b")


def requirement_pins() -> dict[str, str]:
    """``{name: version}`` of the ``name==version`` lines of requirements.txt."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        requirement = line.split("#")[0].strip()
        if "==" in requirement:
            name, _, version = requirement.partition("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def recorded_releases() -> set[str]:
    """Every Lightning or torch release whose one place is the registry, matrix.toml or requirements.txt, with its
    ``major.minor`` (pages say "Lightning 2.6")."""
    pins = requirement_pins()
    with (ROOT / "data" / "compat" / "matrix.toml").open("rb") as handle:
        matrix = tomllib.load(handle)
    full = {pins["lightning"], pins["torch"], *matrix["legacy"], *matrix["matrix"]}
    changelog = {p.removed_in for p in registry.PATTERNS} | {p.deprecated_in for p in registry.PATTERNS}
    return (full | changelog | {".".join(v.split(".")[:2]) for v in full}) - {None}


def committed(*patterns: str) -> list[Path]:
    """The project's files matching ``patterns`` (``*`` also matches ``/``), as a fresh clone holds them: what
    git tracks or does not ignore (tests/builds.py), so no file a build generates."""
    files = source_files()
    assert files is not None, "the project's files are listed by git: run the tests in a git checkout"
    return [ROOT / name for name in files if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)]


def page_lines(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of a page (every line) or of a Python file (its string literals other than docstrings)."""
    if path.suffix != ".py":
        return text_lines(path)
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def where(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def text_lines(path: Path) -> list[tuple[int, str]]:
    """``(line, text)`` of a text file; nothing for a binary one (an image)."""
    try:
        return list(enumerate(path.read_bytes().decode("utf-8").splitlines(), 1))
    except UnicodeDecodeError:
        return []


def typed_releases(paths: list[Path], releases: set[str]) -> list[str]:
    """``path:line: release in 'text'`` for every release of ``releases`` typed in ``paths``."""
    found = []
    for path in paths:
        for number, line in page_lines(path):
            for match in RELEASE.finditer(line):
                if match[1] in releases and not UNIT.match(line, match.end()):
                    found.append(f"{where(path)}:{number}: {match[1]} in {line.strip()[:100]!r}")
    return found


def typed_torch_pins(paths: list[Path], version: str) -> list[str]:
    """``path:line: text`` for every line of ``paths`` that names the torch pin's version."""
    pattern = re.compile(rf"torch\W{{0,3}}{re.escape(version)}\b")
    return [
        f"{where(path)}:{number}: {line.strip()[:100]}"
        for path in paths
        for number, line in text_lines(path)
        if pattern.search(line)
    ]


PAGES = [*committed("docs/*.rst", "docs/*.md", "README.md"), *committed("conf.py", "docs/_ext/*.py")]
CONFIGURATION = committed(
    "noxfile.py",
    ".ci/*",
    ".github/*",
    ".readthedocs.yaml",
    "pyproject.toml",
    "requirements-*.txt",
    "README.md",
    "docs/*",
)


def test_the_places_hold_the_facts():
    """What the scan looks for is real: the releases are there, and so is the torch pin."""
    releases = recorded_releases()
    assert {"1.3", "1.5", "2.0"} <= releases  # the outputs argument's changelog, from the registry
    assert requirement_pins()["torch"] in releases
    assert len(PAGES) > 10 and any(path.name == "index.rst" for path in PAGES)
    assert any(path.name == "noxfile.py" for path in CONFIGURATION)


def test_no_page_or_extension_types_a_release():
    found = typed_releases(PAGES, recorded_releases())
    assert found == [], "type releases in their one place and print them from there:\n" + "\n".join(found)


def test_only_requirements_txt_types_the_torch_pin():
    found = typed_torch_pins(CONFIGURATION, requirement_pins()["torch"])
    assert found == [], "the torch pin is requirements.txt's:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("Lightning 1.3 deprecated the ``outputs`` argument, 1.5 removed it.\n", "1.3"),
        ("Built with Lightning 2.6.6.\n", "2.6.6"),
        ("On pytorch-lightning v1.4.9 the hook still ran.\n", "1.4.9"),
    ],
)
def test_a_typed_release_on_a_page_is_found(tmp_path, text, release):
    page = tmp_path / "page.rst"
    page.write_text("Title\n=====\n\n" + text, encoding="utf-8")
    found = typed_releases([page], recorded_releases())
    assert found[0].startswith(f"{page}:4: {release} in ")


def test_a_typed_release_in_an_extension_string_is_found_and_its_docstring_is_not(tmp_path):
    module = tmp_path / "ext.py"
    module.write_text('"""Renders 2.6.6 (a docstring describes)."""\n\nTEXT = "removed in 1.5"\n', encoding="utf-8")
    assert typed_releases([module], recorded_releases()) == [f"{module}:3: 1.5 in 'removed in 1.5'"]


def test_a_measurement_and_other_numbers_are_not_releases(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "A rebuild took 1.9 s, nox 1.5 min; 2.0 x slower; nox==2026.10.20; 0.1867980659.\n", encoding="utf-8"
    )
    assert typed_releases([page], recorded_releases()) == []


def test_a_typed_torch_pin_is_found(tmp_path):
    version = requirement_pins()["torch"]
    config = tmp_path / "noxfile.py"
    config.write_text(f'session.install("torch=={version}")\n', encoding="utf-8")
    assert typed_torch_pins([config], version) == [f'{config}:1: session.install("torch=={version}")']
