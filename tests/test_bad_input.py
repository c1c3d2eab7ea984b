"""A broken example or notebook fails the build, names itself, and leaves the source tree as it was."""

from __future__ import annotations

from conftest import copy_tree, source_snapshot, sphinx_build

BROKEN_SCRIPT = '''"""
A broken example
================

This example raises.
"""

# %%
cache = [1, 2]
assert len(cache) == 3, "the cache has the wrong length"
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


def test_failing_gallery_script_fails_the_build_and_names_it(tmp_path):
    tree = copy_tree(tmp_path / "tree")
    (tree / "gallery" / "core" / "broken_example.py").write_text(BROKEN_SCRIPT, encoding="utf-8")
    before = source_snapshot(tree)
    build = sphinx_build(tree, "html", "-D", "sphinx_gallery_conf.filename_pattern=broken_example")
    assert build.returncode != 0
    assert "broken_example.py" in build.output
    assert "Traceback" in build.output
    assert "AssertionError: the cache has the wrong length" in build.output
    assert source_snapshot(tree) == before


def test_failing_myst_notebook_fails_the_build_and_names_the_cell(tmp_path):
    tree = copy_tree(tmp_path / "tree")
    (tree / "docs" / "broken-page.md").write_text(BROKEN_NOTEBOOK, encoding="utf-8")
    before = source_snapshot(tree)
    # No gallery example needs to run for this check.
    build = sphinx_build(tree, "html", "-D", "sphinx_gallery_conf.filename_pattern=^$")
    assert build.returncode != 0
    assert "broken-page.md" in build.output
    assert 'raise RuntimeError("the second cell fails")' in build.output
    assert source_snapshot(tree) == before
