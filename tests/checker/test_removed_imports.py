"""LM009: imports of names and modules of ``pytorch_lightning`` that 2.x removed, read from the recorded table
(``lightning_names``: 1.9.5 and 2.6.6 each imported in its own environment)."""

from __future__ import annotations

import importlib

import pytest

from lightning_migrate.checker import check_source, lightning_names
from lightning_migrate.checker.rules import lm009_removed_imports

from ._util import fix

URL = "https://lightning-migrate.readthedocs.io/en/latest/checker/rules/LM009.html"

PAIRS = [
    (
        "a function that moved: imported from where 2.x has it (safe)",
        "from pytorch_lightning.loops.utilities import recursive_detach\n",
        "from pytorch_lightning.utilities.memory import recursive_detach\n",
    ),
    (
        "a value 2.x dropped: defined as 1.9.5 defined it, over the names 2.x has, after the imports (safe)",
        "import torch\nfrom pytorch_lightning.utilities.types import EPOCH_OUTPUT\nfrom torch import nn\n\n\n"
        "def f(outputs: EPOCH_OUTPUT) -> None:\n    pass\n",
        "from typing import List\n\nimport torch\nfrom pytorch_lightning.utilities.types import STEP_OUTPUT\n"
        "from torch import nn\n\n"
        "EPOCH_OUTPUT = List[STEP_OUTPUT]  # Lightning 1.9.5's definition; 2.6.6 has none\n\n\n"
        "def f(outputs: EPOCH_OUTPUT) -> None:\n    pass\n",
    ),
    (
        "a statement that also imports a name still there: it keeps that name",
        "from typing import List\n\nfrom pytorch_lightning.utilities.types import EPOCH_OUTPUT, STEP_OUTPUT\n",
        "from typing import List\n\nfrom pytorch_lightning.utilities.types import STEP_OUTPUT\n\n"
        "EPOCH_OUTPUT = List[STEP_OUTPUT]  # Lightning 1.9.5's definition; 2.6.6 has none\n",
    ),
    (
        "a value with no definition 2.x can make: a marker",
        "import torch\nfrom pytorch_lightning.utilities.types import TrainingStep\n",
        "import torch\n# lightning-migrate: LM009 manual fix, gone in 2.6.6: TrainingStep: no name of 2.6.6 is "
        f"recorded as its replacement; look it up in Lightning's CHANGELOG: {URL}\n"
        "from pytorch_lightning.utilities.types import TrainingStep\n",
    ),
    (
        "a module 2.x removed",
        "import pytorch_lightning.lite\n",
        "# lightning-migrate: LM009 manual fix, module pytorch_lightning.lite: not in 2.6.6's recorded modules: "
        f"{URL}\n"
        "import pytorch_lightning.lite\n",
    ),
]


@pytest.mark.parametrize(("source", "expected"), [p[1:] for p in PAIRS], ids=[p[0] for p in PAIRS])
def test_pair(source, expected):
    assert [f.code for f in check_source(source.encode()).findings] == ["LM009"]
    assert fix(source) == expected
    compile(expected, "expected", "exec")
    assert fix(expected) == expected  # a second --fix adds nothing


@pytest.mark.parametrize(
    "source",
    [
        "from pytorch_lightning.utilities.types import STEP_OUTPUT\n",  # still there
        "from pytorch_lightning.utilities.memory import recursive_detach\n",
        "from lightning.pytorch.utilities.types import STEP_OUTPUT\n",
        "try:\n    from pytorch_lightning.utilities.types import EPOCH_OUTPUT\n"
        "except ImportError:\n    EPOCH_OUTPUT = list\n",
        "from pytorch_lightning.utilities.types import EPOCH_OUTPUT  # noqa: LM009\n",
        "from mypackage.utilities.types import EPOCH_OUTPUT\n",
    ],
    ids=["kept name", "new place", "lightning.pytorch", "guarded by try", "noqa", "another package"],
)
def test_look_alikes_are_left_alone(source):
    assert check_source(source.encode()).findings == []
    assert fix(source) == source


FALLBACK = (
    "try:\n    from pytorch_lightning.utilities.rank_zero import rank_zero_info\n"
    "except ModuleNotFoundError:\n    from pytorch_lightning.utilities.distributed import rank_zero_info\n"
)
BRANCH = (
    "if _PL_GREATER_EQUAL_1_6_0:\n    from pytorch_lightning.strategies import DDPStrategy\n"
    "else:\n    from pytorch_lightning.plugins import DDPPlugin\n"
)


@pytest.mark.parametrize(
    "source",
    [
        FALLBACK,
        FALLBACK.replace("except ModuleNotFoundError:", "except (ImportError, AttributeError):"),
        BRANCH,
        BRANCH.replace("1_6_0", "1_9_5"),
        "if not _PL_GREATER_EQUAL_1_5_0:\n    from pytorch_lightning.plugins import DDPPlugin\n",
        "if flags.PL_GE_1_6:\n    pass\nelse:\n    from pytorch_lightning.plugins import DDPPlugin\n",
    ],
    ids=["fallback", "fallback of a tuple", "older-release branch", "flag of the last 1.x", "if not", "attribute"],
)
def test_an_import_that_never_runs_on_2x_is_not_reported(source):
    """The handler of a ``try`` whose body imports on 2.x (lightning-bolts' ``rank_zero_info``), and the branch
    a flag named for a release up to 1.9.5 keeps for older releases (lightning-flash's ``_PL_GREATER_EQUAL_1_6_0``):
    neither runs on 2.x."""
    assert check_source(source.encode()).findings == []


@pytest.mark.parametrize(
    ("source", "line"),
    [
        (FALLBACK.replace("from pytorch_lightning.utilities.rank_zero", "from baal.utils"), 4),
        (FALLBACK.replace("rank_zero import rank_zero_info", "seed import seed_everything"), 4),
        (FALLBACK.replace("try:\n    from", "try:\n    import math\n    from"), 5),
        (BRANCH.replace("1_6_0", "2_1_0"), 4),
        (BRANCH.replace("_PL_GREATER_EQUAL_1_6_0", "_BAAL_AVAILABLE"), 4),
        (BRANCH.replace("if _PL", "if not _PL"), 4),
    ],
    ids=[
        "body of another package",
        "body imports a removed name",
        "body does more",
        "newer flag",
        "other flag",
        "negated: the else runs",
    ],
)
def test_an_import_that_may_run_on_2x_is_still_reported(source, line):
    assert [(f.code, f.line) for f in check_source(source.encode()).findings] == [("LM009", line)]


def test_a_definition_used_outside_annotations_is_opt_in():
    """``EPOCH_OUTPUT`` read by running code (not only in annotations) would hold 2.x's ``STEP_OUTPUT``, which is
    not 1.9.5's: the definition is ``unsafe``, and ``--fix`` leaves a marker saying so."""
    source = "from pytorch_lightning.utilities.types import EPOCH_OUTPUT\n\nprint(EPOCH_OUTPUT)\n"
    [finding] = check_source(source.encode()).findings
    assert finding.tier == "unsafe"
    assert "unsafe fix" in fix(source) and "EPOCH_OUTPUT = " not in fix(source)
    assert "EPOCH_OUTPUT = List[STEP_OUTPUT]" in fix(source, unsafe_fixes=True)


def test_a_definition_needing_a_name_the_file_binds_otherwise_is_manual():
    source = "from pytorch_lightning.utilities.types import EPOCH_OUTPUT\n\nList = list\n"
    [finding] = check_source(source.encode()).findings
    assert finding.tier == "manual" and "`List` is another name in this file" in fix(source)


def test_the_commonest_project_with_epoch_output_imports_and_runs_after_a_plain_fix(tmp_path, capsys):
    """The commonest project, its hooks annotated with ``EPOCH_OUTPUT`` as Lightning 1.x's own hooks were: after a
    plain ``--fix``, the file imports on the installed Lightning and logs the old epoch means."""
    import json
    import os
    import subprocess
    import sys

    from . import test_proven
    from ._util import run, write

    annotated = test_proven.COMMON_PROJECT.replace(
        "import torch\n", "import torch\nfrom pytorch_lightning.utilities.types import EPOCH_OUTPUT\n", 1
    ).replace("(self, outputs):", "(self, outputs: EPOCH_OUTPUT) -> None:")
    assert annotated.count("EPOCH_OUTPUT") == 3
    project = write(tmp_path / "project", {"model.py": annotated, "pyproject.toml": ""})
    code, out, err = run(["--fix", project / "model.py"], capsys)
    assert code == 1 and "1 safe fix" in err and "3 proven fixes" in err, err
    fixed = (project / "model.py").read_text(encoding="utf-8")
    assert "EPOCH_OUTPUT = List[STEP_OUTPUT]" in fixed and check_source(fixed.encode()).findings == []
    import isort

    # the imports of both stdlib names and both Lightning modules that the fixes add, each block sorted
    assert isort.check_code(annotated, profile="black") and isort.check_code(fixed, profile="black", show_diff=True)
    runner = tmp_path / "runner.py"
    runner.write_text(test_proven.RUNNER, encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run([sys.executable, str(runner), str(project)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["logged"]["train_epoch_mean"] == pytest.approx(result["truth"]["train_epoch_mean"], rel=1e-5)


def test_the_definitions_come_from_the_recorded_releases():
    """The table's definition of ``EPOCH_OUTPUT`` is the 1.9.5 record's expression, and each name it imports is
    bound where the 2.6.6 record says."""
    import json

    from migration_guide import source_tree

    folder = source_tree.ROOT / "src" / "lightning_migrate" / "data" / "lightning_names"
    old, new = (json.loads((folder / f"{v}.json").read_text(encoding="utf-8")) for v in ("1.9.5", "2.6.6"))
    table = lightning_names.load()
    definition = table["definitions"]["pytorch_lightning.utilities.types"]["EPOCH_OUTPUT"]
    assert definition["expression"] == old["values"]["pytorch_lightning.utilities.types"]["EPOCH_OUTPUT"]["expression"]
    for module, name in definition["imports"]:
        assert module == "typing" or name in new["modules"][module], (module, name)
    newest = lightning_names.compare(old, new)  # the older release's entries are merged beside these
    assert all(table["removed"][m][n] == r for m, names in newest["removed"].items() for n, r in names.items())
    assert all(table["definitions"][m][n] == d for m, names in newest["definitions"].items() for n, d in names.items())


def _record(version: str) -> dict:
    import json

    from migration_guide import source_tree

    folder = source_tree.ROOT / "src" / "lightning_migrate" / "data" / "lightning_names"
    return json.loads((folder / f"{version}.json").read_text(encoding="utf-8"))


def test_the_table_is_the_comparison_of_every_recorded_release():
    """The table is :func:`~lightning_names.compare_releases` of the recorded 1.x releases with 2.6.6: what the
    newest 1.x release had, and what only the older one had (``pytorch_lightning.core.lightning``), each
    attributed to the release that had it."""
    table = lightning_names.load()
    olds = [_record(version) for version in table["releases"]]
    assert lightning_names.compare_releases(olds, _record(table["new"])) == table
    assert table["modules_had"]["pytorch_lightning.core.lightning"] == table["releases"][0]
    assert "pytorch_lightning.core.lightning" in olds[0]["modules"]
    assert "pytorch_lightning.core.lightning" not in olds[-1]["modules"]


def test_the_older_listing_was_recorded_in_its_own_environment():
    """The 1.4.9 listing: every module imported, with torchmetrics of 1.4's time (0.6 no longer has the
    ``r2score`` that ``pytorch_lightning.metrics.functional`` imports)."""
    record = _record("1.4.9")
    assert record["environment"]["pytorch-lightning"] == "1.4.9" and record["failed"] == []
    assert record["environment"]["torchmetrics"].startswith("0.4.")
    assert "pytorch_lightning.metrics.functional" in record["modules"]


OLDER = [
    (
        "the old module of the module class: reported as the older release's, imported from the package that "
        "exported the same class then and binds the name now (safe)",
        "from pytorch_lightning.core.lightning import LightningModule\n",
        "safe",
    ),
    ("the module itself", "import pytorch_lightning.core.lightning as L\n", "manual"),
    (
        "a metric of the old metrics package, which 2.x has no counterpart of",
        "from pytorch_lightning.metrics import Accuracy\n",
        "manual",
    ),
    (
        "a name of the older release defined where 2.x defines it: imported from there (safe)",
        "from pytorch_lightning.core.lightning import ModelHooks\n",
        "safe",
    ),
]


@pytest.mark.parametrize(("source", "tier"), [p[1:] for p in OLDER], ids=[p[0] for p in OLDER])
def test_a_name_only_an_older_release_had_is_reported_naming_it(source, tier):
    table = lightning_names.load()
    older, newest = table["releases"][0], table["old"]
    [finding] = check_source(source.encode(), fix=True).findings
    assert finding.code == "LM009" and finding.tier == tier
    assert f"Lightning {older} has it, {table['new']} does not" in finding.message
    assert f"Lightning {newest} has it" not in finding.message


def test_a_class_2x_defines_elsewhere_is_named_without_rewriting_it():
    """1.9.5 defined ``CombinedLoader`` in ``pytorch_lightning.trainer.supporters`` and exported it from no module
    2.6.6 still binds it in; 2.6.6 defines one in ``pytorch_lightning.utilities.combined_loader``: the records show
    the same name, not the same object, so the marker names the new place and ``--fix`` rewrites nothing."""
    source = "from pytorch_lightning.trainer.supporters import CombinedLoader\n"
    fixed = fix(source, unsafe_fixes=True)
    assert fixed.endswith(source) and "LM009 manual fix" in fixed
    assert "defines a CombinedLoader in pytorch_lightning.utilities.combined_loader, not shown to be 1.9.5's" in fixed


def test_the_module_class_s_old_import_is_imported_from_where_1x_exported_it():
    """1.4.9 exported the very class of ``pytorch_lightning.core.lightning`` from ``pytorch_lightning`` (the 1.4.9
    record: the same home), and 2.6.6 binds ``LightningModule`` there: a plain ``--fix`` imports it from there, and
    the fixed line runs on the installed release."""
    record = _record("1.4.9")
    home = record["modules"]["pytorch_lightning.core.lightning"]["LightningModule"]
    assert record["modules"]["pytorch_lightning"]["LightningModule"] == home
    fixed = fix("from pytorch_lightning.core.lightning import LightningModule\n")
    assert fixed == "from pytorch_lightning import LightningModule\n"
    namespace: dict = {}
    exec(compile(fixed, "fixed", "exec"), namespace)  # noqa: S102 - the fixed line, run on the installed release
    assert namespace["LightningModule"].__name__ == "LightningModule"


def _names(version: str, modules: dict) -> dict:
    return {"package": "p", "version": version, "failed": [], "modules": modules}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ({"p.core.lm": {"M": "p.core.lm"}, "p": {"M": "p.core.lm"}}, {"p": {"M": "p.core.module"}}, "p"),
        (
            {"p.core.lm": {"M": "p.core.lm"}, "p": {"M": "p.core.lm"}, "p.core": {"M": "p.core.lm"}},
            {"p": {"M": "p.core.module"}, "p.core": {"M": "p.core.module"}},
            "p",
        ),
        ({"p.a": {"E": "p.err"}, "p.err": {"E": "p.err"}}, {"p.err": {"E": "q.err"}}, "p.err"),
        ({"p.core.lm": {"M": "p.core.lm"}, "p.other": {"M": "p.core.lm"}}, {"p.other": {"M": "p.x"}}, None),
        ({"p.core.lm": {"M": "p.core.lm"}, "p": {"M": "p.core.lm"}}, {"p": {}}, None),
        ({"p.core.lm": {"M": "p.core.lm"}, "p": {"M": "p.elsewhere"}}, {"p": {"M": "p.core.module"}}, None),
        ({"p.core.lm": {"M": "p.core.lm"}, "p._private": {"M": "p.core.lm"}}, {"p._private": {"M": "p.x"}}, None),
    ],
    ids=[
        "the package exported it",
        "the shallowest package",
        "its own home, still bound",
        "a module that is no package above: no",
        "the new package lacks the name: no",
        "another object in the old package: no",
        "a private module: no",
    ],
)
def test_compare_imports_from_where_the_old_release_exported_the_same_object(old, new, expected):
    """A removed class or function that the old release also bound elsewhere with the same home (the same object)
    -- its home, or a package above the module or the home -- is imported from there where the new release still
    binds the name: the table gives it as the replacement and under ``"exported"``."""
    removed = next(m for m, names in old.items() if "M" in names or "E" in names if m not in new)
    name = "M" if "M" in old[removed] else "E"
    table = lightning_names.compare(_names("1", old), _names("2", new))
    assert table["removed"][removed][name] == expected
    assert table["exported"].get(removed, {}).get(name) == expected


def test_a_safe_fix_of_an_older_release_s_name_imports_on_the_installed_lightning():
    fixed = fix("from pytorch_lightning.core.lightning import ModelHooks\n")
    assert fixed == "from pytorch_lightning.core.hooks import ModelHooks\n"
    exec(compile(fixed, "fixed", "exec"), {})  # noqa: S102 - the fixed line, run on the installed release
    assert check_source(fixed.encode()).findings == []


@pytest.mark.parametrize(
    "source",
    [
        "from pytorch_lightning import LightningModule, Trainer, seed_everything\n",
        "from pytorch_lightning.trainer.states import RunningStage, TrainerFn, TrainerState\n",
        "from pytorch_lightning.core.hooks import ModelHooks\n",
        "import pytorch_lightning.core.module\n",
    ],
    ids=["top level", "trainer states", "hooks", "module kept"],
)
def test_an_older_release_s_name_that_2x_still_has_is_not_reported(source):
    assert check_source(source.encode()).findings == []


def test_the_1x_listing_was_recorded_beside_its_era_s_pins():
    """The 1.9.5 listing was made in an environment of 1.9's time (torchmetrics 0.x, as pip resolved it then), with
    ``requests``, which ``pytorch_lightning.serve`` imports: every module imported."""
    import json

    from migration_guide import source_tree

    record = json.loads(
        (source_tree.ROOT / "src" / "lightning_migrate" / "data" / "lightning_names" / "1.9.5.json").read_text()
    )
    assert record["environment"]["pytorch-lightning"] == "1.9.5"
    assert record["environment"]["torchmetrics"].startswith("0.")
    assert record["environment"]["torch"].startswith("2.13.0")
    assert "requests" in record["environment"] and record["failed"] == []


def test_a_nested_import_is_reported_without_a_fix():
    source = "def f():\n    from pytorch_lightning.utilities.types import EPOCH_OUTPUT\n    return EPOCH_OUTPUT\n"
    [finding] = check_source(source.encode(), fix=True).findings
    assert (finding.code, finding.line, finding.col, finding.tier) == ("LM009", 2, 5, None)


def test_a_nested_import_of_a_name_without_replacement_says_where_to_look():
    """Under ``if _PL_GREATER_EQUAL_1_4_0:`` (true on 2.x) the import gets no marker: what the marker would say
    (no recorded replacement, look it up in the CHANGELOG) is in the message instead."""
    data = lm009_removed_imports.table()

    def marked(module: str, name: str) -> bool:
        [top] = check_source(f"from {module} import {name}\n".encode(), fix=True).findings
        return top.tier == "manual" and "CHANGELOG" in top.fix.description and "CHANGELOG" not in top.message

    module, name = next(
        (module, name)
        for module, names in data["removed"].items()
        for name, target in names.items()
        if target is None and marked(module, name)
    )
    [finding] = check_source(f"if NEW:\n    from {module} import {name}\n".encode(), fix=True).findings
    assert (finding.line, finding.tier) == (2, None)
    assert finding.message.endswith(
        f"; {name}: no name of {data['new']} is recorded as its replacement; look it up in Lightning's CHANGELOG"
    ), finding.message


def test_an_import_from_the_lightning_packages_copy_is_reported_with_a_marker():
    """``from lightning.pytorch.utilities.types import EPOCH_OUTPUT``: looked up as the ``pytorch_lightning`` import,
    named as the file wrote it, and left to a marker (the fixes name ``pytorch_lightning``'s modules); the import
    fails on the installed release as reported."""
    source = "from lightning.pytorch.utilities.types import EPOCH_OUTPUT, STEP_OUTPUT\n"
    [finding] = check_source(source.encode(), fix=True).findings
    assert finding.code == "LM009" and finding.tier == "manual"
    assert finding.message.startswith("`EPOCH_OUTPUT` of `lightning.pytorch.utilities.types`:"), finding.message
    assert "pytorch_lightning" not in finding.message
    fixed = fix(source)
    assert fixed.endswith(source) and "# lightning-migrate: LM009 manual fix, define EPOCH_OUTPUT: fix by hand" in fixed
    module = importlib.import_module("lightning.pytorch.utilities.types")
    assert not hasattr(module, "EPOCH_OUTPUT") and hasattr(module, "STEP_OUTPUT")
    assert check_source(b"from lightning.pytorch.utilities.types import STEP_OUTPUT\n").findings == []
    assert check_source(b"from lightning.pytorch_extra import EPOCH_OUTPUT\n").findings == []


ATTRIBUTE_USE = """\
import pytorch_lightning as pl


def summarize(outputs: pl.utilities.types.EPOCH_OUTPUT) -> pl.utilities.types.STEP_OUTPUT:
    return outputs[0]
"""


@pytest.mark.parametrize(
    ("imports", "read"),
    [
        ("import pytorch_lightning as pl", "pl.utilities.types.EPOCH_OUTPUT"),
        ("import pytorch_lightning.utilities.types as T", "T.EPOCH_OUTPUT"),
        ("from pytorch_lightning.utilities import types", "types.EPOCH_OUTPUT"),
        ("import lightning.pytorch as pl", "pl.utilities.types.EPOCH_OUTPUT"),
        ("import pytorch_lightning", "pytorch_lightning.utilities.types.EPOCH_OUTPUT"),
    ],
)
def test_a_removed_name_read_as_an_attribute_of_the_package_is_reported(imports, read):
    """``pl.utilities.types.EPOCH_OUTPUT`` in an annotation raises ``AttributeError`` at the ``def`` on 2.x (the
    module has no such name there); the kept ``STEP_OUTPUT`` beside it is not reported."""
    source = ATTRIBUTE_USE.replace("import pytorch_lightning as pl", imports).replace(
        "pl.utilities.types.EPOCH_OUTPUT", read
    )
    [finding] = check_source(source.encode(), fix=True).findings
    assert (finding.code, finding.line, finding.tier) == ("LM009", 4, None)
    assert finding.message.startswith(f"`EPOCH_OUTPUT` of `pytorch_lightning.utilities.types`, read as `{read}`:")
    assert "reading it fails where it runs: the module has no such attribute; define `EPOCH_OUTPUT` as 1.9.5 did" in (
        finding.message
    )
    module = importlib.import_module("lightning.pytorch.utilities.types")
    assert not hasattr(module, "EPOCH_OUTPUT")
    postponed = check_source(("from __future__ import annotations\n" + source).encode()).findings
    assert ["only a type checker reads it" in f.message for f in postponed] == [True]


def test_the_fixed_commonest_import_now_imports_on_the_installed_lightning():
    fixed = fix("from pytorch_lightning.loops.utilities import recursive_detach\n")
    namespace: dict = {}
    exec(compile(fixed, "fixed", "exec"), namespace)  # noqa: S102 - the fixed line, run on the installed release
    assert callable(namespace["recursive_detach"])


def test_the_table_matches_the_installed_release():
    """Every name the table says 2.x removed is absent from the installed release, every replacement binds the
    name, and every module said gone does not import (the 1.9.5 half was recorded in its own environment)."""
    table = lightning_names.load()
    installed = importlib.import_module(table["package"]).__version__
    assert table["new"] == installed
    assert table["removed"]["pytorch_lightning.utilities.types"]["EPOCH_OUTPUT"] is None
    assert table["removed"]["pytorch_lightning.loops.utilities"]["recursive_detach"] == (
        "pytorch_lightning.utilities.memory"
    )
    # the replacements too: a module 2.x keeps importable for old code has no file of its own (``...tpu_bf16``)
    places = {r for names in table["removed"].values() for r in names.values() if r is not None}
    now = lightning_names.record(also=(*table["removed"], *table["modules_removed"], *sorted(places)))
    for module, names in table["removed"].items():
        for name, replacement in names.items():
            assert name not in now["modules"].get(module, {}), (module, name)
            # not bound at all: no attribute of that name, public or imported, once every module is imported
            assert module not in now["modules"] or not hasattr(importlib.import_module(module), name), (module, name)
            if replacement is not None:
                assert name in now["modules"][replacement], (replacement, name)
    for module in table["modules_removed"]:
        assert module not in now["modules"]
        with pytest.raises(ImportError):
            importlib.import_module(module)


def test_compare_reads_replacements_from_the_homes():
    old = {
        "package": "p",
        "version": "1",
        "failed": [],
        "modules": {
            "p.a": {"moved": "p.b.impl", "value": "p.a", "kept": "p.a"},
            "p.gone": {"f": "p.gone"},
        },
    }
    new = {
        "package": "p",
        "version": "2",
        "failed": [],
        "modules": {"p.a": {"kept": "p.a"}, "p.b.impl": {"moved": "p.b.impl"}, "p.c": {"value": "p.c"}},
    }
    assert lightning_names.compare(old, new) == {
        "package": "p",
        "old": "1",
        "new": "2",
        "removed": {"p.a": {"moved": "p.b.impl", "value": None}, "p.gone": {"f": None}},
        "exported": {},
        "modules_removed": ["p.gone"],
        "definitions": {},
        "deprecated": {},
    }


@pytest.mark.parametrize(
    "source",
    [
        "from pytorch_lightning.utilities.enums import LightningEnum\n",
        "from pytorch_lightning.trainer.states import LightningEnum\n",
        "from pytorch_lightning.utilities.types import LRScheduler, ReduceLROnPlateau\n",
    ],
    ids=["enums (lightning-flash)", "trainer states", "types"],
)
def test_a_name_2x_binds_without_listing_it_public_is_not_reported(source):
    """``LightningEnum`` is no public name of the installed release's ``pytorch_lightning.utilities.enums`` (it
    imports it from lightning_utilities), but the module binds it, so the import works there: no finding."""
    assert check_source(source.encode()).findings == []
    exec(compile(source, "source", "exec"), {})  # noqa: S102 - the import, run on the installed release


def test_the_names_2x_binds_without_listing_them_are_recorded_from_it():
    """The new release's record's ``"bound"``: the older records' names each module binds (``hasattr``) without
    its listing counting them public -- recorded by importing, and only those the older listings name."""
    new = _record(lightning_names.load()["new"])
    olds = [_record(version) for version in lightning_names.load()["releases"]]
    assert "LightningEnum" in new["bound"]["pytorch_lightning.utilities.enums"]
    assert "LightningEnum" not in new["modules"]["pytorch_lightning.utilities.enums"]
    for module, names in new["bound"].items():
        assert names == sorted(names) and not set(names) & set(new["modules"][module]), module
        assert set(names) <= {n for old in olds for n in old["modules"].get(module, {})}, module


def test_compare_leaves_out_a_name_the_new_release_binds_without_listing_it():
    """A name the new module binds only through an import (its ``"bound"``) imports there: not removed; a name it
    binds in neither way is."""
    old = {
        "package": "p",
        "version": "1",
        "failed": [],
        "modules": {"p.a": {"Enum": "p.a", "gone": "p.a"}},
    }
    new = {
        "package": "p",
        "version": "2",
        "failed": [],
        "modules": {"p.a": {}, "q": {"Enum": "q"}},
        "bound": {"p.a": ["Enum"]},
    }
    assert lightning_names.compare(old, new)["removed"] == {"p.a": {"gone": None}}
    assert lightning_names.compare(old, {**new, "bound": {}})["removed"] == {"p.a": {"Enum": None, "gone": None}}


def test_compare_keeps_a_shim_s_replacement_where_it_is_a_drop_in():
    """A deprecation shim of the old release (``value`` of ``p.a``, recorded with its message and the parameters of
    what the message names) has that replacement where the new release binds a callable taking every call it
    took; ``None`` where the new release lacks it."""
    shim = {
        "message": "use `q.value`",
        "replacement": "q.value",
        "forwards": True,
        "parameters": [["x", "POSITIONAL_OR_KEYWORD", None]],
    }
    old = {
        "package": "p",
        "version": "1",
        "failed": [],
        "modules": {"p.a": {"value": "p.a", "other": "p.a"}},
        "deprecated": {"p.a": {"value": shim, "other": {**shim, "replacement": "q.other"}}},
    }
    new = {
        "package": "p",
        "version": "2",
        "failed": [],
        "modules": {"p.a": {}},
        "replacements": {
            "q.value": [["x", "POSITIONAL_OR_KEYWORD", None], ["y", "KEYWORD_ONLY", "1"]],
            "q.other": None,
        },
    }
    assert lightning_names.compare(old, new)["deprecated"] == {
        "p.a": {
            "other": {"message": "use `q.value`", "replacement": None, "drop_in": False, "forwards": True},
            "value": {"message": "use `q.value`", "replacement": "q.value", "drop_in": True, "forwards": True},
        }
    }


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        ([["seed", "POSITIONAL_OR_KEYWORD", "None"]], True),
        ([["seed", "POSITIONAL_OR_KEYWORD", "None"], ["verbose", "POSITIONAL_OR_KEYWORD", "True"]], True),
        ([["seed", "POSITIONAL_OR_KEYWORD", "None"], ["kwargs", "VAR_KEYWORD", None]], True),
        ([["seed", "POSITIONAL_OR_KEYWORD", "None"], ["device", "POSITIONAL_OR_KEYWORD", None]], False),
        ([["seed", "POSITIONAL_OR_KEYWORD", "0"]], False),
        ([["seed", "KEYWORD_ONLY", "None"]], False),
        ([["s", "POSITIONAL_OR_KEYWORD", "None"]], False),
        (None, False),
    ],
    ids=[
        "same",
        "an optional parameter added",
        "**kwargs added",
        "a required one added",
        "another default",
        "keyword-only now",
        "renamed",
        "no signature",
    ],
)
def test_drop_in(new, expected):
    assert lightning_names.drop_in([["seed", "POSITIONAL_OR_KEYWORD", "None"]], new) is expected


SHIMS = [
    (
        "a shim that only handed the call on, called: imported from what its message names (safe)",
        "from pytorch_lightning.utilities.seed import seed_everything\n\nseed_everything(0)\n",
        "from lightning_fabric.utilities.seed import seed_everything\n\nseed_everything(0)\n",
        "safe",
    ),
    (
        "beside a name still there: that name stays, the replacement joins the imports (safe)",
        "import torch\nfrom pytorch_lightning.utilities.seed import isolate_rng, seed_everything\n\n"
        "seed_everything(1)\n",
        "import torch\nfrom lightning_fabric.utilities.seed import seed_everything\n"
        "from pytorch_lightning.utilities.seed import isolate_rng\n\nseed_everything(1)\n",
        "safe",
    ),
    (
        "a decorator (safe)",
        "from pytorch_lightning.utilities.distributed import rank_zero_only\n\n\n@rank_zero_only\ndef f():\n    pass\n",
        "from pytorch_lightning.utilities import rank_zero_only\n\n\n@rank_zero_only\ndef f():\n    pass\n",
        "safe",
    ),
    (
        "read otherwise than called: the shim was another object (unsafe)",
        "from pytorch_lightning.utilities.distributed import rank_zero_only\n\nrank_zero_only.rank = 0\n",
        "from pytorch_lightning.utilities import rank_zero_only\n\nrank_zero_only.rank = 0\n",
        "unsafe",
    ),
    (
        "a shim that did more than hand the call on (unsafe)",
        "from pytorch_lightning.utilities.apply_func import apply_to_collection\n\n"
        "apply_to_collection([1], int, str)\n",
        "from lightning_utilities.core.apply_func import apply_to_collection\n\napply_to_collection([1], int, str)\n",
        "unsafe",
    ),
    (
        "a name that moved, beside names still there, over several lines: the trailing comma stays (safe)",
        "from pytorch_lightning.loggers import (\n    CSVLogger,\n    NeptuneLogger,\n)\n",
        "from pytorch_lightning.loggers.neptune import NeptuneLogger\nfrom pytorch_lightning.loggers import (\n"
        "    CSVLogger,\n)\n",
        "safe",
    ),
]


@pytest.mark.parametrize(("source", "expected", "tier"), [p[1:] for p in SHIMS], ids=[p[0] for p in SHIMS])
def test_a_deprecated_name_is_imported_from_its_replacement(source, expected, tier):
    [finding] = check_source(source.encode()).findings
    assert finding.tier == tier
    assert fix(source, unsafe_fixes=True) == expected
    compile(expected, "expected", "exec")
    assert check_source(expected.encode()).findings == []
    if tier == "unsafe":
        assert "unsafe fix" in fix(source) and fix(source).endswith(source)  # plain --fix: a marker only


def test_the_fixed_imports_import_on_the_installed_lightning():
    for _, _, expected, _ in SHIMS:
        imports = expected.split("\n\n")[0] + "\n"  # the file's import block, as fixed
        exec(compile(imports, "fixed", "exec"), {})  # noqa: S102 - the fixed imports, run on the installed release


def test_a_shim_without_a_drop_in_keeps_its_message_in_the_marker():
    source = "from pytorch_lightning.utilities.cloud_io import load as pl_load\n"
    [finding] = check_source(source.encode()).findings
    assert finding.tier == "manual"
    assert "1.9.5 said: `pytorch_lightning.utilities.cloud_io.load` has been deprecated" in fix(source)
    assert "copy over its implementation" in fix(source)


def test_the_shims_come_from_the_recorded_releases():
    """Each shim of the table is the 1.9.5 record's: its message as the shim emitted it when called there, and the
    replacement the message names; a drop-in where the 2.6.6 record gives the replacement the same parameters and
    more optional ones."""
    import json

    from migration_guide import source_tree

    folder = source_tree.ROOT / "src" / "lightning_migrate" / "data" / "lightning_names"
    old, new = (json.loads((folder / f"{v}.json").read_text(encoding="utf-8")) for v in ("1.9.5", "2.6.6"))
    table = lightning_names.load()
    shim = table["deprecated"]["pytorch_lightning.utilities.seed"]["seed_everything"]
    recorded = old["deprecated"]["pytorch_lightning.utilities.seed"]["seed_everything"]
    assert (
        shim["message"] == recorded["message"]
        and "`lightning_fabric.utilities.seed.seed_everything`" in shim["message"]
    )
    assert shim["replacement"] == recorded["replacement"] == "lightning_fabric.utilities.seed.seed_everything"
    assert shim["drop_in"] and lightning_names.drop_in(recorded["parameters"], new["replacements"][shim["replacement"]])
    assert table["deprecated"]["pytorch_lightning.utilities.cloud_io"]["load"]["replacement"] is None


def test_an_import_for_the_type_checker_only_is_reported_as_one():
    """``if TYPE_CHECKING:`` never runs: the finding says a type checker, not Python, meets the missing name; the
    fix is the same as for a run-time import."""
    source = (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
        "    from pytorch_lightning.utilities.types import EPOCH_OUTPUT\n"
    )
    [finding] = check_source(source.encode()).findings
    assert finding.code == "LM009" and finding.line == 4
    assert "runs only for a type checker" in finding.message and "raises ImportError" not in finding.message
    [run_time] = check_source(b"from pytorch_lightning.utilities.types import EPOCH_OUTPUT\n").findings
    assert "the import raises ImportError" in run_time.message


@pytest.mark.parametrize(
    "source",
    [
        "if not TYPE_CHECKING:\n    pass\nelse:\n    from pytorch_lightning.utilities.types import EPOCH_OUTPUT\n",
        "if TYPE_CHECKING and X:\n    from pytorch_lightning.utilities.types import EPOCH_OUTPUT\n",
        "if typing.TYPE_CHECKING:\n    from pytorch_lightning.utilities.types import EPOCH_OUTPUT\n",
    ],
    ids=["else of if not", "and", "typing.TYPE_CHECKING"],
)
def test_every_type_checker_only_branch_is_named_as_one(source):
    [finding] = check_source(source.encode()).findings
    assert "runs only for a type checker" in finding.message, finding.message


TOMBSTONED = [
    (
        "read only in annotations: safe",
        "from pytorch_lightning.loggers import LightningLoggerBase\n\n\ndef loggers() -> list[LightningLoggerBase]:\n"
        "    return []\n",
        "safe",
    ),
    (
        "beside a name still there: safe, renamed in place",
        "from pytorch_lightning.loggers import LightningLoggerBase, CSVLogger\n\nx: LightningLoggerBase = None\n",
        "safe",
    ),
    (
        "read outside annotations: unsafe",
        "from pytorch_lightning.loggers import LightningLoggerBase\n\n\ndef is_logger(x):\n"
        "    return isinstance(x, LightningLoggerBase)\n",
        "unsafe",
    ),
]


@pytest.mark.parametrize(("source", "tier"), [p[1:] for p in TOMBSTONED], ids=[p[0] for p in TOMBSTONED])
def test_a_tombstoned_name_is_imported_from_what_its_message_names(source, tier):
    """1.9.5 left ``pytorch_lightning.loggers.base.LightningLoggerBase`` as a class that only raises, naming
    ``pytorch_lightning.loggers.Logger`` (its 1.9.5 record): the finding quotes it, and the fix imports ``Logger``
    under the name the file binds; the fixed file runs on the installed release."""
    stone = _record("1.9.5")["tombstones"]["pytorch_lightning.loggers.base.LightningLoggerBase"]
    assert stone["replacement"] == "pytorch_lightning.loggers.Logger"
    [finding] = check_source(source.encode(), fix=True).findings
    assert finding.code == "LM009" and finding.tier == tier
    assert f"1.9.5 said: {stone['message']}" in finding.message
    fixed = fix(source, unsafe_fixes=True)
    assert "import Logger as LightningLoggerBase" in fixed and "lightning-migrate" not in fixed
    namespace: dict = {}
    exec(compile(fixed, "fixed", "exec"), namespace)  # noqa: S102 - the fixed file, run on the installed release
    from pytorch_lightning.loggers import Logger

    assert namespace["LightningLoggerBase"] is Logger
    # a plain --fix applies the safe tier only
    assert ("import Logger as LightningLoggerBase" in fix(source)) == (tier == "safe")


def test_a_tombstone_whose_replacement_2x_lacks_leaves_its_message_in_a_marker():
    """``pytorch_lightning.plugins.DDP2Plugin``: 1.9.5's tombstone names ``DDP2Strategy``, which 2.6.6 does not
    bind: a marker quotes the message, the statement is left as it is."""
    source = "from pytorch_lightning.plugins import DDP2Plugin\n"
    [finding] = check_source(source.encode(), fix=True).findings
    assert finding.tier == "manual" and "DDP2Strategy" in finding.message and "1.9.5 said" in finding.message
    fixed = fix(source, unsafe_fixes=True)
    assert fixed.endswith(source) and "LM009 manual fix" in fixed


def test_tombstones_are_read_by_calling_them(tmp_path, monkeypatch):
    """:func:`lightning_names._tombstones`: a class whose ``__init__`` only raises ``NotImplementedError`` and a
    function that only raises it, keyed by the dotted name their message names (``pl.`` read as
    ``pytorch_lightning.``), with the replacement the message names where it imports; a function that does more,
    or raises another error, is no tombstone."""
    (tmp_path / "stones.py").write_text(
        "class Old:\n"
        "    def __init__(self, *_, **__):\n"
        "        raise NotImplementedError('`pl.old.Old` was removed. Please use `from json import JSONDecoder`')\n\n\n"
        "def gone(*_, **__):\n"
        "    raise NotImplementedError('`pytorch_lightning.x.gone` was removed. Use `json.dumps` instead')\n\n\n"
        "def busy(*_, **__):\n"
        "    print('busy')\n"
        "    raise NotImplementedError('`pytorch_lightning.x.busy` was removed. Use `json.dumps` instead')\n\n\n"
        "def other(*_, **__):\n"
        "    raise ValueError('`pytorch_lightning.x.other` was removed. Use `json.dumps` instead')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("stones")
    found = lightning_names._tombstones(module)
    assert found == {
        "pytorch_lightning.old.Old": {
            "message": "`pl.old.Old` was removed. Please use `from json import JSONDecoder`",
            "replacement": "json.JSONDecoder",
        },
        "pytorch_lightning.x.gone": {
            "message": "`pytorch_lightning.x.gone` was removed. Use `json.dumps` instead",
            "replacement": "json.dumps",
        },
    }


def test_the_table_s_tombstones_are_the_last_1x_release_s():
    """Every tombstone of the table is one the 1.9.5 record holds (the message as recorded), and its replacement is
    bound by the 2.6.6 record where the table keeps it."""
    table, old, new = lightning_names.load(), _record("1.9.5"), _record("2.6.6")
    messages = {stone["message"] for stone in old["tombstones"].values()}
    entries = [entry for names in table["tombstones"].values() for entry in names.values()]
    assert len(entries) >= 40
    for entry in entries:
        assert entry["message"] in messages and entry["release"] == "1.9.5"
        if entry["replacement"]:
            module, _, name = entry["replacement"].rpartition(".")
            assert name in new["modules"][module]
