"""A wrong migration fails the build: mutate the replacement examples and build them again."""

from __future__ import annotations

import re

import pytest
from conftest import copy_tree, source_snapshot, sphinx_build

REPLACEMENTS = [
    "core/callback_side_caching.py",
    "core/module_side_caching.py",
    "stages/validation_epoch_end.py",
    "stages/test_epoch_end.py",
    "stages/predict_epoch_end.py",
]


def remove_clear_calls(source: str) -> str:
    """Delete every statement line that calls ``.clear()``."""
    return re.sub(r"^[ \t]*[\w.\[\]\"']+\.clear\(\)[ \t]*\n", "", source, flags=re.M)


def overwrite_instead_of_append(source: str) -> str:
    """``cache.append(x)`` becomes ``cache = [x]``."""
    return re.sub(r"(self\.\w+)\.append\((.*)\)$", r"\1 = [\2]", source, flags=re.M)


MUTATIONS = {
    "clear-removed": (remove_clear_calls, REPLACEMENTS),
    "overwrite-instead-of-append": (overwrite_instead_of_append, REPLACEMENTS),
}


@pytest.mark.parametrize("name", MUTATIONS)
def test_mutated_replacement_fails_the_build(tmp_path, name):
    mutate, scripts = MUTATIONS[name]
    tree = copy_tree(tmp_path / "tree")
    for script in scripts:
        path = tree / "gallery" / script
        original = path.read_text(encoding="utf-8")
        mutated = mutate(original)
        assert mutated != original, f"the {name} mutation changed nothing in {script}"
        path.write_text(mutated, encoding="utf-8")
    pattern = "|".join(re.escape(s.split("/")[-1]) for s in scripts)
    before = source_snapshot(tree)
    build = sphinx_build(tree, "html", "-D", f"sphinx_gallery_conf.filename_pattern=({pattern})$")
    assert build.returncode != 0, f"the build passed with the {name} mutation"
    for script in scripts:
        assert script.split("/")[-1] in build.output, f"the failure does not name {script}"
    assert "AssertionError" in build.output
    # The scenario matrix runs the same mutated classes: the build's error names recipe, scenario and page.
    for script in scripts:
        assert re.search(rf"^\s*\w+ × \w+: expected holds, got .*\[gallery/{re.escape(script)}", build.output, re.M)
    assert source_snapshot(tree) == before, "the failed build changed the source tree"


def test_mutations_are_real(tmp_path):
    """The unmutated replacement examples build: the failures above come from the mutations alone."""
    tree = copy_tree(tmp_path / "tree")
    pattern = "|".join(re.escape(s.split("/")[-1]) for s in REPLACEMENTS)
    build = sphinx_build(tree, "html", "-D", f"sphinx_gallery_conf.filename_pattern=({pattern})$")
    assert build.returncode == 0, build.output[-4000:]


INJECTED_WARNING = 'warnings.warn("injected", UserWarning)'
INJECTED_NOTEBOOK_WARNING = 'warnings.warn("injected in the notebook", UserWarning)'


def test_an_undeclared_warning_fails_the_build_naming_file_and_line(tmp_path):
    """A warning injected into a copy of an example, and one into the MyST notebook, each fail the one build.

    Everything else in the tree is unchanged, so the failures come from the injections (the site fixture builds the
    same tree without them, green). The notebook's warning is checked with ``-W --keep-going`` in the same build.
    """
    tree = copy_tree(tmp_path / "tree")
    source = (tree / "gallery" / "core" / "old_outputs_hooks.py").read_text(encoding="utf-8")
    injected = source.rstrip("\n") + f"\n\n# %%\nimport warnings\n\n{INJECTED_WARNING}\n"
    line = injected.splitlines().index(INJECTED_WARNING) + 1
    (tree / "gallery" / "core" / "injected_warning.py").write_text(injected, encoding="utf-8")
    page = tree / "docs" / "which-replacement.md"
    page.write_text(
        page.read_text(encoding="utf-8")
        + f"\n```{{code-cell}} ipython3\nimport warnings\n\n{INJECTED_NOTEBOOK_WARNING}\n```\n",
        encoding="utf-8",
    )
    before = source_snapshot(tree)
    build = sphinx_build(tree, "html", "-D", "sphinx_gallery_conf.filename_pattern=injected_warning")
    assert build.returncode != 0, "the build passed with an injected warning"
    # sphinx-gallery names the failing script; the traceback names the file and the line that warned.
    assert "injected_warning.py" in build.output
    assert re.search(rf'injected_warning\.py", line {line}\b', build.output), build.output[-4000:]
    assert "UserWarning: injected" in build.output
    # myst-nb names the page and shows the cell that warned.
    output = re.sub(r"\x1b\[[0-9;]*m", "", build.output)  # Sphinx and IPython colour their output
    assert "which-replacement" in output
    assert INJECTED_NOTEBOOK_WARNING in output
    assert re.search(r"^\s*-+> \d+ " + re.escape(INJECTED_NOTEBOOK_WARNING), output, re.M), output[-4000:]
    assert "UserWarning: injected in the notebook" in output
    assert source_snapshot(tree) == before, "the failed build changed the source tree"
