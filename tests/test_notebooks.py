"""Every notebook sphinx-gallery generated runs on its own, in a real Jupyter kernel, in an empty directory."""

from __future__ import annotations

import shutil
from importlib import metadata

import nbformat
import pytest
from conftest import GALLERY_SCRIPTS
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


@pytest.mark.parametrize("script", GALLERY_SCRIPTS, ids=str)
def test_notebook_runs_alone(site, script, tmp_path):
    generated = site.tree / "docs" / "examples" / script.with_suffix(".ipynb")
    notebook_path = tmp_path / generated.name
    shutil.copy(generated, notebook_path)  # nothing else in the directory: no helper module, no gallery
    notebook = nbformat.read(notebook_path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": tmp_path}})
    try:
        client.execute()
    except CellExecutionError as err:  # name the notebook and the failing cell
        pytest.fail(f"{script.with_suffix('.ipynb')}: a cell failed:\n{err}")
    streams = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert f"Lightning {metadata.version('lightning')}" in streams
