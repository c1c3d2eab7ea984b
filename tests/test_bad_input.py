"""A broken example or notebook fails the build, names itself, and leaves the source tree as it was.

Each build is a fixture project with the guide's own configuration (conf.py: sphinx-gallery's and myst-nb's
settings, the declared warnings) and only the extensions the check needs.
"""

from __future__ import annotations

import re

from builds import GALLERY_CONF, GALLERY_EXTENSIONS, project, source_snapshot, sphinx_build

BROKEN_SCRIPT = '''"""
A broken example
================

This example raises.
"""

# %%
cache = [1, 2]
assert len(cache) == 3, "the cache has the wrong length"
'''

WORKING_SCRIPT = '''"""
A working example
=================

This example runs.
"""

# %%
print("ran")
'''

BROKEN_NOTEBOOK = """---
file_format: mystnb
kernelspec:
  name: python3
  display_name: Python 3
---

# A broken page

```{code-cell} ipython3
first_cell_ran = True
```

```{code-cell} ipython3
raise RuntimeError("the second cell fails")
```
"""


def sources(tree):
    """The project's own files (sphinx-gallery's generated ``examples/`` and the build output left out)."""
    return {path: data for path, data in source_snapshot(tree).items() if not path.startswith("examples/")}


def test_failing_gallery_script_fails_the_build_and_names_it(tmp_path):
    """conf.py's gallery settings: every example runs, and one that raises fails the build naming its script."""
    files = {
        "index.rst": "Site\n====\n\n.. toctree::\n\n   examples/index\n",
        "gallery/README.txt": "Gallery\n=======\n",
        "gallery/broken_example.py": BROKEN_SCRIPT,
        "gallery/working_example.py": WORKING_SCRIPT,
    }
    tree = project(tmp_path, files, f"extensions = {list(GALLERY_EXTENSIONS)!r}\n{GALLERY_CONF}")
    before = sources(tree)
    build = sphinx_build(tree, source=".")
    assert build.returncode != 0
    assert "broken_example.py" in build.output
    assert "Traceback" in build.output
    assert "AssertionError: the cache has the wrong length" in build.output
    output = re.sub(r"\x1b\[[0-9;]*m", "", build.output)  # Sphinx colours its output
    assert re.findall(r"^(\S+) unexpectedly failed to execute", output, re.M) == ["gallery/broken_example.py"]
    assert sources(tree) == before


def test_failing_myst_notebook_fails_the_build_and_names_the_cell(tmp_path):
    """conf.py's myst-nb settings: every cell runs, and one that raises fails the build naming page and cell."""
    files = {"index.md": "# Site\n\n```{toctree}\nbroken-page\n```\n", "broken-page.md": BROKEN_NOTEBOOK}
    tree = project(tmp_path, files, 'extensions = ["myst_nb"]')
    before = sources(tree)
    build = sphinx_build(tree, source=".")
    assert build.returncode != 0
    assert "broken-page.md" in build.output
    assert 'raise RuntimeError("the second cell fails")' in build.output
    assert sources(tree) == before
