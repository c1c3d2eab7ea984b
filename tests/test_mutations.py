"""A wrong migration fails: mutate the replacement examples, and both the examples and the scenario matrix fail.

The build fails when an example raises (tests/test_bad_input.py) and when the scenario matrix has a cell that is not
the declared one (tests/test_scenarios.py, the matrix's own mutants, and the scenario_matrix extension's test in
tests/test_build_extensions.py). What is left to show is that a plausible wrong migration of each replacement
example *does* raise -- run as the build and a reader run it, on its own -- and that the matrix, running the same
mutated page, names the recipe, the scenario and the page. The unmutated examples pass: the site fixture's build
executes every one of them, and tests/test_notebooks.py runs each one's notebook on its own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from build_mechanics import declared_warnings
from builds import GALLERY_CONF, GALLERY_EXTENSIONS, ROOT, project, sphinx_build

from migration_guide import scenarios

REPLACEMENTS = [
    "core/callback_side_caching.py",
    "core/module_side_caching.py",
    "stages/validation_epoch_end.py",
    "stages/test_epoch_end.py",
    "stages/predict_epoch_end.py",
]


def remove_clear_calls(source: str) -> str:
    """Every statement that only calls ``.clear()`` (a comment may follow) becomes ``pass``: the cache is never
    cleared, and a method that did nothing else stays valid Python."""
    return re.sub(r"^([ \t]*)[\w.\[\]\"']+\.clear\(\)[ \t]*(?:#.*)?$", r"\1pass", source, flags=re.M)


def overwrite_instead_of_append(source: str) -> str:
    """``cache.append(x)`` becomes ``cache = [x]``; ``cache.setdefault(key, []).append(x)``, ``cache[key] = [x]``."""
    source = re.sub(r"(self\.\w+)\.append\((.*)\)$", r"\1 = [\2]", source, flags=re.M)
    return re.sub(r"(self\.\w+)\.setdefault\((\w+), \[\]\)\.append\((.*)\)$", r"\1[\2] = [\3]", source, flags=re.M)


MUTATIONS = {"clear-removed": remove_clear_calls, "overwrite-instead-of-append": overwrite_instead_of_append}


def mutated_gallery(tmp_path, name: str):
    """A copy of ``gallery/`` with the mutation ``name`` applied to every replacement example."""
    gallery = tmp_path / "gallery"
    shutil.copytree(ROOT / "gallery", gallery)
    for script in REPLACEMENTS:
        path = gallery / script
        original = path.read_text(encoding="utf-8")
        mutated = MUTATIONS[name](original)
        assert mutated != original, f"the {name} mutation changed nothing in {script}"
        path.write_text(mutated, encoding="utf-8")
    return gallery


def run_alone(script, cwd) -> subprocess.CompletedProcess:
    """Run ``script`` with this Python in ``cwd``, under the build's warning filters, as a reader runs a download."""
    env = dict(os.environ, PYTHONWARNINGS=declared_warnings.pythonwarnings(), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("script", REPLACEMENTS)
@pytest.mark.parametrize("name", MUTATIONS)
def test_mutated_replacement_example_raises_naming_its_line(tmp_path, name, script):
    gallery = mutated_gallery(tmp_path, name)
    run = run_alone(gallery / script, tmp_path)
    assert run.returncode != 0, f"{script} passed with the {name} mutation:\n{run.stdout[-2000:]}"
    assert "AssertionError" in run.stderr, run.stderr[-3000:]
    # the traceback's last frame in the example names the example's own file, where the conclusion is asserted
    frames = re.findall(r'^  File "([^"]+)", line (\d+)', run.stderr, flags=re.M)
    assert frames and frames[-1][0] == str(gallery / script), run.stderr[-3000:]


def pages_the_matrix_mutants_do_not_cover(name: str) -> list[str]:
    """The replacement pages whose ``name`` mutation tests/test_scenarios.py does not already run through the matrix:
    a mutant there that turns the page into the same source covers it (``missing-clear-callback`` is this module's
    ``clear-removed`` of callback_side_caching.py)."""
    from test_scenarios import MUTATIONS as MATRIX_MUTANTS

    uncovered = []
    for script in REPLACEMENTS:
        source = (ROOT / "gallery" / script).read_text(encoding="utf-8")
        mutated = MUTATIONS[name](source)
        same = [m for m, (page, _, mutate, _) in MATRIX_MUTANTS.items() if page == script and mutate(source) == mutated]
        if not same:
            uncovered.append(script)
    return uncovered


@pytest.mark.parametrize("name", MUTATIONS)
def test_scenario_matrix_names_each_mutated_page(tmp_path, name):
    """The matrix runs the recipes of the mutated pages (the classes it runs are the pages' own): every page has a
    cell that no longer holds, named ``recipe × scenario: expected holds, got ... [gallery/<page>...]``. Pages whose
    same mutation tests/test_scenarios.py already runs through the matrix are left to it."""
    mutated_gallery(tmp_path, name)
    _, recipes = scenarios.load_matrix()
    pages = {f"gallery/{script}" for script in pages_the_matrix_mutants_do_not_cover(name)}
    if name == "overwrite-instead-of-append":  # no matrix mutant overwrites a cache: every page is this test's
        assert pages == {f"gallery/{script}" for script in REPLACEMENTS}
    assert pages, f"every page's {name} mutant is in tests/test_scenarios.py: this case has nothing left to run"
    first_recipe = {}  # one recipe per page is enough to show the page is caught: the matrix file's first
    for recipe in recipes:
        first_recipe.setdefault(recipe.page, recipe.id)
    selected = [first_recipe[page] for page in sorted(pages)]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS=declared_warnings.pythonwarnings())
    args = [arg for recipe in selected for arg in ("--recipe", recipe)]
    # the Trainer's defaults, three epochs and a predict run: each page's recipe runs in one of them (the whole
    # matrix over these recipes took 200-300 s a mutation)
    args += ["--named-only", *(f"--scenario={sid}" for sid in ("defaults", "three_epochs", "predict_only"))]
    command = [sys.executable, "-m", "migration_guide.scenarios", "--root", str(tmp_path), *args]
    run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    for page in sorted(pages):
        line = rf"^scenario matrix: \w+ × \w+: expected holds, got .*\[{re.escape(page)}"
        assert re.search(line, run.stderr, re.M), f"no failing cell names {page}:\n{run.stderr[-3000:]}"


INJECTED_WARNING = 'warnings.warn("injected", UserWarning)'
INJECTED_NOTEBOOK_WARNING = 'warnings.warn("injected in the notebook", UserWarning)'
NOTEBOOK = """---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
---

# A page that warns

```{{code-cell}} ipython3
import warnings

import lightning.pytorch  # Lightning's own import-time filters must not hide a warning

{warning}
```
"""


def test_an_undeclared_warning_fails_the_build_naming_file_and_line(tmp_path):
    """A warning injected at the end of a real example (after Lightning trained), and one in a MyST page after
    Lightning is imported, each fail one build of the guide's configuration, naming the file and the line."""
    source = (ROOT / "gallery" / "core" / "old_outputs_hooks.py").read_text(encoding="utf-8")
    source = re.sub(r":claim:`([^`]+)`", r"\1", source)  # this project has no claims extension to render them
    injected = source.rstrip("\n") + f"\n\n# %%\nimport warnings\n\n{INJECTED_WARNING}\n"
    line = injected.splitlines().index(INJECTED_WARNING) + 1
    files = {
        "index.rst": "Site\n====\n\n.. toctree::\n\n   examples/index\n   warns\n",
        "warns.md": NOTEBOOK.format(warning=INJECTED_NOTEBOOK_WARNING),
        "gallery/README.txt": "Gallery\n=======\n",
        "gallery/injected_warning.py": injected,
    }
    conf = f"extensions = {[*GALLERY_EXTENSIONS, 'myst_nb']!r}\n"
    tree = project(tmp_path, files, conf + GALLERY_CONF)
    build = sphinx_build(tree, source=".")
    assert build.returncode != 0, "the build passed with an injected warning"
    # sphinx-gallery names the failing script; the traceback names the file and the line that warned.
    assert "injected_warning.py" in build.output
    assert re.search(rf'injected_warning\.py", line {line}\b', build.output), build.output[-4000:]
    assert "UserWarning: injected" in build.output
    # myst-nb names the page and shows the cell that warned.
    output = re.sub(r"\x1b\[[0-9;]*m", "", build.output)  # Sphinx and IPython colour their output
    assert "warns.md" in output
    assert re.search(r"^\s*-+> \d+ " + re.escape(INJECTED_NOTEBOOK_WARNING), output, re.M), output[-4000:]
    assert "UserWarning: injected in the notebook" in output
