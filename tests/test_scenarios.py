"""The scenario matrix: it reads what the pages show, and it catches the mistakes users make.

Each mutation below is a plausible user mistake, applied to the recipe's own gallery page in a copy of the tree.
The matrix (``python -m lightning_migrate.scenarios``, what the build runs) must fail and name the scenario that
caught it; the unmutated pages must pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from builds import ROOT

from lightning_migrate import scenarios


def run_matrix(root: Path, *recipes: str) -> subprocess.CompletedProcess:
    """Run the matrix over ``root``'s gallery pages (only ``recipes``); never raises on a failing matrix."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    args = [arg for recipe in recipes for arg in ("--recipe", recipe)]
    command = [sys.executable, "-m", "lightning_migrate.scenarios", "--root", str(root), *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False, timeout=600)


def failing_scenarios(stderr: str, recipe: str) -> set[str]:
    """The scenarios the matrix's error lines name for ``recipe``."""
    return set(re.findall(rf"^scenario matrix: {re.escape(recipe)} × (\w+):", stderr, flags=re.M))


def sub(pattern: str, replacement: str, count: int = 0):
    """A mutation: ``re.sub`` over the page's source, multiline."""
    return lambda source: re.sub(pattern, replacement, source, count=count, flags=re.M)


#: name -> (page under gallery/, recipe id, mutation of the page source, scenarios at least one of which must fail)
MUTATIONS = {
    "missing-clear-callback": (
        "core/callback_side_caching.py",
        "callback_side",
        sub(r"^\s*self\.batch_losses\.clear\(\)\n", ""),
        {"defaults", "three_epochs"},
    ),
    "missing-clear-module": (
        "core/module_side_caching.py",
        "module_side",
        sub(r"^\s*self\.training_step_losses\.clear\(\)\n", ""),
        {"defaults", "three_epochs"},
    ),
    "loss-under-accumulation": (
        "core/callback_side_caching.py",
        "callback_side",
        sub(r" \* trainer\.accumulate_grad_batches", ""),
        {"accumulate_3"},
    ),
    "no-empty-outputs-guard": (
        "core/callback_side_caching.py",
        "callback_side",
        sub(r"^\s*if not outputs:.*\n\s*return\n", ""),
        {"step_returns_none", "manual_returns_nothing"},
    ),
    "dropped-detach": (
        "core/module_side_caching.py",
        "module_side",
        sub(r'output\["loss"\]\.detach\(\)', 'output["loss"]'),
        {"defaults"},
    ),
    "validation-cleared-in-train-epoch-end": (
        "stages/validation_epoch_end.py",
        "validation",
        sub(r"^(\s*)def on_validation_epoch_end\(self\):", r"\1def on_train_epoch_end(self):"),
        {"val_twice_per_epoch", "validate_only", "validate_then_fit"},
    ),
    "stack-for-cat": (
        "stages/predict_epoch_end.py",
        "predict",
        sub(r"torch\.cat\(self\.predict_step_outputs\)", "torch.stack(self.predict_step_outputs)"),
        {"uneven_last_batch"},
    ),
    "missing-clear-test": (
        "stages/test_epoch_end.py",
        "test",
        sub(r"^\s*self\.test_step_losses\.clear\(\)\n", ""),
        {"test_twice"},
    ),
    "missing-clear-predict": (
        "stages/predict_epoch_end.py",
        "predict",
        sub(r"^\s*self\.predict_step_outputs\.clear\(\)\n", ""),
        {"predict_twice"},
    ),
    "nan-predictions": (
        "stages/predict_epoch_end.py",
        "predict",
        sub(r"^(\s*)self\.all_predictions = torch\.cat\(self\.predict_step_outputs\)$", r"\g<0> * float('nan')"),
        {"predict_only"},
    ),
    "global-step-as-sanity-guard": (
        "pitfalls/sanity_check_pollution.py",
        "sanity_guarded",
        sub(r"if self\.trainer\.sanity_checking:", "if self.global_step == 0:"),
        {"validate_only", "validate_then_fit"},
    ),
    "ignores-dataloader-idx": (
        "pitfalls/multiple_val_dataloaders.py",
        "per_loader",
        sub(r"self\.validation_step_losses\[dataloader_idx\]\.append", "self.validation_step_losses[0].append"),
        {"two_val_dataloaders"},
    ),
    "padded-sample-counted-twice": (
        "distributed/ddp_per_rank_caches.py",
        "ddp_dataset_mean",
        sub(r"\[: len\(loaders\[idx\]\.dataset\)\]", ""),
        {"ddp_odd_dataset"},
    ),
    "callback-cache-cleared-at-train-epoch-end": (
        "caching/callback_owned_cache.py",
        "callback_owned_validation",
        sub(
            r"def on_validation_epoch_end\(self, trainer, pl_module\):",
            "def on_train_epoch_end(self, trainer, pl_module):",
        ),
        {"val_twice_per_epoch", "validate_only"},
    ),
    "metric-weights-batches-equally": (
        "stages/torchmetrics_no_cache.py",
        "torchmetrics",
        sub(r", weight=len\(batch\)", ""),
        {"uneven_last_batch"},
    ),
    "metric-states-not-reset": (
        "stages/torchmetrics_no_cache.py",
        "torchmetrics",
        sub(r"self\.val_mean_loss\.reset\(\).*$", "pass"),
        {"validate_then_fit"},
    ),
}


@pytest.fixture(scope="module")
def matrix():
    return scenarios.load_matrix()


@pytest.mark.parametrize("name", MUTATIONS)
def test_mutant_fails_naming_the_scenario(tmp_path, name):
    page, recipe, mutate, catchers = MUTATIONS[name]
    shutil.copytree(ROOT / "gallery", tmp_path / "gallery")
    path = tmp_path / "gallery" / page
    original = path.read_text(encoding="utf-8")
    mutated = mutate(original)
    assert mutated != original, f"the {name} mutation changed nothing in {page}"
    path.write_text(mutated, encoding="utf-8")
    run = run_matrix(tmp_path, recipe)
    assert run.returncode == 1, run.stdout + run.stderr
    caught = failing_scenarios(run.stderr, recipe)
    assert caught & catchers, f"{name}: caught by {sorted(caught)}, expected one of {sorted(catchers)}\n{run.stderr}"
    assert f"gallery/{page}" in run.stderr  # the error names the page the reader copies from


def test_a_declared_cell_must_fail_the_declared_way():
    """A declared error is that error (its ``match``), and a declared difference is one of value, not of count:
    otherwise a recipe that logs nothing, or raises something else, would pass as declared."""
    expect = {
        "two": {"outcome": "raises", "reason": "r", "match": "dataloader_idx"},
        "ddp": {"outcome": "differs", "reason": "r"},
    }
    document = {
        "recipes": [{"id": "r", "page": "gallery/p.py", "expect": expect}],
        "cells": [
            {"recipe": "r", "scenario": "two", "expected": "raises", "outcome": "raises", "detail": "KeyError: 'x'"},
            {"recipe": "r", "scenario": "ddp", "expected": "differs", "outcome": "differs", "relative_error": None,
             "detail": "0 values logged, 2 expected"},
        ],
    }  # fmt: skip
    assert scenarios.failures(document) == [
        "r × two: expected raises with 'dataloader_idx', got: KeyError: 'x' [gallery/p.py]",
        "r × ddp: expected differs in value, got: 0 values logged, 2 expected [gallery/p.py]",
    ]
    document["cells"][0]["detail"] = "RuntimeError: no `dataloader_idx` argument"
    document["cells"][1].update(relative_error=0.03, detail="largest relative error 0.03")
    assert scenarios.failures(document) == []


def test_every_recipe_holds_where_declared(site, matrix):
    """The unmutated pages: every cell has its declared outcome (the failures above come from the mutations). The
    site's build ran the whole matrix on them; its results are read, not run again."""
    document = json.loads((site.outdir / ".doctrees" / "scenario-matrix.json").read_text(encoding="utf-8"))
    scenarios_declared, recipes = matrix
    assert [r["id"] for r in document["recipes"]] == [r.id for r in recipes]
    assert len(document["cells"]) == len(recipes) * len(scenarios_declared) > 0
    assert scenarios.failures(document) == []


def test_recipe_code_comes_from_the_page(tmp_path, matrix):
    """The class that runs is the page's: a traceback from it names the page's file and line."""
    _, recipes = matrix
    recipe = next(r for r in recipes if r.id == "callback_side")
    page = ROOT / recipe.page
    namespace = scenarios.page_definitions(page, recipe.define, object)
    callback_class = namespace["EpochLossCallback"]
    assert callback_class.on_train_batch_end.__code__.co_filename == str(page)
    source_line = next(
        number
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if "def on_train_batch_end" in line
    )
    assert callback_class.on_train_batch_end.__code__.co_firstlineno == source_line


def test_missing_definition_names_the_page(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("import torch\n\nclass Present:\n    pass\n", encoding="utf-8")
    with pytest.raises(scenarios.MatrixError, match=r"page\.py: defines no top-level 'Absent'"):
        scenarios.page_definitions(page, ("Present", "Absent"), object)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[scenario.a]\nruns = ["train"]\n', r"\[scenario\.a\] runs must list"),
        ('[scenario.a]\nruns = ["fit"]\nbase = "nope"\n', r"\[scenario\.a\] base must be one of"),
        ('[recipe.r]\ntitle = "t"\n', r"\[recipe\.r\] lacks \['define', 'metric', 'module', 'page', 'stage'"),
        (
            '[scenario.a]\nruns = ["fit"]\n[recipe.r]\ntitle="t"\npage="p"\ndefine=[]\nmodule="M"\nstage="train"\n'
            'weighting="batch"\nmetric="m"\n[recipe.r.expect]\na = { outcome = "holds" }\n',
            r"expect\.a needs outcome = differs \| raises and a reason",
        ),
        ("[scenario\n", r"matrix\.toml: "),
    ],
)
def test_malformed_matrix_names_file_and_table(tmp_path, text, message):
    path = tmp_path / "matrix.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(scenarios.MatrixError, match=message) as error:
        scenarios.load_matrix(path)
    assert str(path) in str(error.value)


def test_ground_truth_weightings_differ_on_an_uneven_last_batch():
    """The two weightings the matrix compares with are different numbers when the last batch is short."""
    import torch

    per_batch = [torch.tensor([1.0, 1.0, 1.0, 1.0]), torch.tensor([3.0])]
    assert scenarios._reduce(per_batch, "batch") == 2.0  # (1 + 3) / 2: each batch's mean counts once
    assert scenarios._reduce(per_batch, "sample") == pytest.approx(1.4)  # 7 / 5: each sample counts once


def test_results_are_rerun_when_a_recipe_page_changes(tmp_path):
    """The build re-uses the matrix's results only while nothing they depend on changed: editing a recipe's page
    (or the matrix file) changes the key the extension stores beside the results."""
    from builds import copy_tree

    tree = copy_tree(tmp_path / "tree")
    script = (
        "import sys; sys.path[:0] = ['docs/_ext', 'src']; from guide import scenario_matrix; "
        "print(scenario_matrix.inputs_key())"
    )

    def key() -> str:
        return subprocess.run(
            [sys.executable, "-c", script], cwd=tree, capture_output=True, text=True, check=True
        ).stdout.strip()

    before = key()
    assert key() == before
    page = tree / "gallery" / "core" / "module_side_caching.py"
    page.write_text(page.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    after_page = key()
    assert after_page != before
    matrix = tree / "data" / "scenarios.toml"
    matrix.write_text(matrix.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert key() not in (before, after_page)
