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
