"""The downloaded script and notebook of an example: its title first, then one short cell for the reader
(docs/_ext/build_mechanics/reader_downloads.py). Their runs are tested in test_notebooks.py."""

from __future__ import annotations

import pytest
from build_mechanics import reader_downloads

REQUIREMENTS = "# the site's pins\ntorch==2.13.0\nlightning==2.6.6\nmatplotlib==3.11.2\nsphinx==9.0.4\n"


def test_the_install_line_pins_what_the_script_imports_in_the_order_of_requirements():
    script = "import csv\nimport lightning.pytorch as pl\nfrom torch.utils.data import DataLoader\nimport torch\n"
    assert reader_downloads.install_line(script, REQUIREMENTS) == "pip install torch==2.13.0 lightning==2.6.6"
    with pytest.raises(LookupError, match="imports psutil, which requirements.txt does not pin"):
        reader_downloads.install_line("import psutil\n", REQUIREMENTS)


def test_a_script_that_imports_or_runs_this_project_installs_it_from_its_repository_last():
    own = ("lightning-migrate", "git+https://example.org/r@v1.2.3")
    runs = 'import sys\nimport torch\nsubprocess.run([sys.executable, "-m", "lightning_migrate.checker", "f.py"])\n'
    imports = "from lightning_migrate.checker import rewrite_source\nimport lightning\n"
    for script in (runs, imports):
        line = reader_downloads.install_line(script, REQUIREMENTS, own)
        assert line.endswith(" git+https://example.org/r@v1.2.3"), line
    assert reader_downloads.install_line(runs, REQUIREMENTS, own) == (
        "pip install torch==2.13.0 git+https://example.org/r@v1.2.3"
    )
    assert reader_downloads.install_line("import torch\n", REQUIREMENTS, own) == "pip install torch==2.13.0"
    with pytest.raises(LookupError, match="imports lightning_migrate, which requirements.txt does not pin"):
        reader_downloads.install_line(imports, REQUIREMENTS)  # no project given: its package is not pinned


SCRIPT = '"""\nTitle\n=====\n\nWhat it shows.\n"""\n\n# %%\n# Text.\nprint("hello")\n'


def test_the_script_gets_the_cell_after_its_title_once():
    cell = f"{reader_downloads.FIRST_LINE} pip install x==1\nimport logging"
    once = reader_downloads.script_with_cell(SCRIPT, cell)
    assert once == ('"""\nTitle\n=====\n\nWhat it shows.\n"""\n\n# %%\n' + cell + '\n\n# %%\n# Text.\nprint("hello")\n')
    assert reader_downloads.script_with_cell(once, cell) == once
    with pytest.raises(ValueError, match="does not start with its title"):
        reader_downloads.script_with_cell('print("no title")\n', cell)


def test_the_notebook_gets_the_cell_after_its_title_once():
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# Title\n\nWhat it shows."},
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": 'print("hello")'},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 0,
    }
    cell = f"{reader_downloads.FIRST_LINE}\nimport logging"
    once = reader_downloads.notebook_with_cell(notebook, cell)
    assert [c["source"] for c in once["cells"]] == ["# Title\n\nWhat it shows.", cell, 'print("hello")']
    assert reader_downloads.notebook_with_cell(once, cell) == once
    with pytest.raises(ValueError, match="no title cell"):
        reader_downloads.notebook_with_cell({**notebook, "cells": notebook["cells"][1:]}, cell)


def test_the_notebook_loses_its_blank_code_cells_and_keeps_every_other_cell():
    code = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# Title"},
            {**code, "source": 'print("hello")'},
            {**code, "source": ["\n", "  "]},  # where a hidden check stood
            {"cell_type": "markdown", "metadata": {}, "source": ""},
            {**code, "source": ""},
            {**code, "source": ["x = 1\n", "print(x)"]},
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 0,
    }
    kept = reader_downloads.without_blank_code_cells(notebook)
    assert [(c["cell_type"], c["source"]) for c in kept["cells"]] == [
        ("markdown", "# Title"),
        ("code", 'print("hello")'),
        ("markdown", ""),
        ("code", ["x = 1\n", "print(x)"]),
    ]
    assert kept["metadata"] == notebook["metadata"] and len(notebook["cells"]) == 6  # the input is left as it was
