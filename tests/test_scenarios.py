"""The scenario matrix: it reads what the pages show, it catches the mistakes users make, it covers its space.

Each mutation below is a plausible user mistake, applied to the recipe's own gallery page in a copy of the tree.
The matrix (``python -m migration_guide.scenarios``, what the build runs) must fail and name the scenario that
caught it; the unmutated pages must pass. The covering set holds every pair of values (checked by enumeration,
apart from the generator); the ground truth counts each sample once under DDP; a recipe produced by a transform
runs the transform's code; the ``recipe-domain`` box renders on a small project and becomes a link in a notebook.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import forked
import pypandoc
import pytest
from build_mechanics import run_cache
from builds import ROOT

from migration_guide import scenarios
from migration_guide.scenarios import harness, space, truth


def run_matrix(root: Path, *recipes: str, scenario_ids=(), named_only=False) -> subprocess.CompletedProcess:
    """Run the matrix over ``root``'s pages (only ``recipes``, only ``scenario_ids``), as ``python -m
    migration_guide.scenarios`` in a new process (forked from one that imported it: :mod:`forked`); never raises on a
    failing matrix."""
    args = ["--root", str(root), *(arg for recipe in recipes for arg in ("--recipe", recipe))]
    args += [arg for sid in scenario_ids for arg in ("--scenario", sid)]
    args += ["--named-only"] if named_only else []
    output = root.with_name(f"{root.name}-matrix-run")
    return forked.run_module("migration_guide.scenarios", args, output, {"PYTHONPATH": str(ROOT / "src")})


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
        sub(r"^(\s*)self\.batch_losses\.clear\(\).*$", r"\1pass"),  # every clear: at epoch start and end
        {"defaults", "three_epochs"},
    ),
    "missing-clear-module": (
        "core/module_side_caching.py",
        "module_side",
        sub(r"^(\s*)self\.training_step_outputs\.clear\(\).*$", r"\1pass"),  # every clear: at epoch start and end
        {"defaults", "three_epochs"},
    ),
    "cache-not-emptied-at-epoch-start": (
        "core/callback_side_caching.py",
        "callback_side",
        sub(r"^(\s*)self\.batch_losses\.clear\(\)  # nothing left over.*$", r"\1pass"),
        {"crash_and_rerun"},
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
        sub(
            r"self\.training_step_outputs\.append\(loss\.detach\(\)\.clone\(\)\)",
            "self.training_step_outputs.append(loss)",
        ),
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
        sub(r"\[torch\.cat\(batches\) for _, batches in", "[torch.stack(batches) for _, batches in"),
        {"uneven_last_batch"},
    ),
    "missing-clear-test": (
        "stages/test_epoch_end.py",
        "test",
        sub(r"^(\s*)self\.test_step_outputs\.clear\(\).*$", r"\1pass"),  # every clear: at epoch start and end
        {"test_twice"},
    ),
    "missing-clear-predict": (
        "stages/predict_epoch_end.py",
        "predict",
        sub(r"^(\s*)self\.predict_step_outputs\.clear\(\).*$", r"\1pass"),  # every clear: at epoch start and end
        {"predict_twice"},
    ),
    "nan-predictions": (
        "stages/predict_epoch_end.py",
        "predict",
        sub(r"\[torch\.cat\(batches\) for _, batches in", "[torch.cat(batches) * float('nan') for _, batches in"),
        {"predict_only"},
    ),
    "global-step-as-sanity-guard": (
        "pitfalls/sanity_check_pollution.py",
        "sanity_guarded",
        sub(r"if self\.trainer\.sanity_checking:", "if self.global_step == 0:"),
        {"validate_only", "validate_then_fit"},
    ),
    # The step's output kept whole, as a dict: the value is right, the cache holds the loss's graph.
    "cache-keeps-step-dict": (
        "core/module_side_caching.py",
        "module_side",
        lambda source: re.sub(
            r"torch\.stack\(self\.training_step_outputs\)",
            'torch.stack([o["loss"] for o in self.training_step_outputs])',
            re.sub(
                r"self\.training_step_outputs\.append\(loss\.detach\(\)\.clone\(\)\)",
                'self.training_step_outputs.append({"loss": loss})',
                source,
            ),
        ),
        {"defaults"},
    ),
    # The cache as a class attribute, the loss appended with its graph.
    "class-attribute-cache-keeps-graph": (
        "core/module_side_caching.py",
        "module_side",
        lambda source: re.sub(
            r"training_step_outputs\.append\(loss\.detach\(\)\.clone\(\)\)",
            "training_step_outputs.append(loss)",
            re.sub(
                r"^    def __init__\(self\):\n        super\(\)\.__init__\(\)\n"
                r"        self\.training_step_outputs = \[\].*\n",
                "    training_step_outputs = []  # one list for the class\n",
                source,
                count=1,
                flags=re.M,
            ),
        ),
        {"defaults"},
    ),
    # A best-so-far value kept in a plain attribute: a resumed or restarted run starts it again from infinity and
    # logs its own best (1.891 where the best of the whole training, before the checkpoint, was 1.572).
    "best-value-not-in-checkpoint": (
        "pitfalls/sanity_check_pollution.py",
        "sanity_guarded_best",
        sub(r"^    def on_(save|load)_checkpoint\(self, checkpoint\):\n.*\n", ""),
        {"report_neuronx_nemo_16", "restart_from_last"},
    ),
    # The sanity check's easier batches (0.930) beat every real validation of the not-monotone data.
    "best-value-counts-sanity-check": (
        "pitfalls/sanity_check_pollution.py",
        "sanity_guarded_best",
        sub(r"^(\s*)if self\.trainer\.sanity_checking:\n\s*return\n(?=\s*self\.best_val_loss = )", ""),
        {"not_monotone_sanity"},
    ),
    # A validation loss that rises (1.572, then 1.686): the run's own value is not the best so far.
    "best-value-reset-every-run": (
        "pitfalls/sanity_check_pollution.py",
        "sanity_guarded_best",
        sub(r"self\.best_val_loss = min\(self\.best_val_loss, mean\.item\(\)\)", "self.best_val_loss = mean.item()"),
        {"not_monotone_sanity"},
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
        sub(r"\[: len\(loader\.dataset\)\]", ""),
        {"ddp_odd_dataset"},
    ),
    # Reading the gathered blocks rank by rank keeps a repeated sample and cuts a real one: only where the sampler
    # repeats two samples or more (3 processes, 3k + 1 samples); with one repeat, the cut drops just that one.
    "gathered-rank-by-rank": (
        "distributed/ddp_per_rank_caches.py",
        "ddp_dataset_mean",
        sub(r"rows\.transpose\(0, 1\)\[kept\.T\]", "rows[kept]"),
        {"ddp_3_two_repeated_samples"},
    ),
    "vectors-gathered-rank-by-rank": (
        "distributed/ddp_gather_per_sample_vectors.py",
        "ddp_gather_per_sample_vectors",
        sub(r"rows\.transpose\(0, 1\)\[kept\.T\]", "rows[kept]"),
        {"ddp_3_two_repeated_samples"},
    ),
    # A training loss's epoch mean of rank 0's batches only (Lightning #20683): neither reduced nor synchronized.
    "training-mean-of-own-rank": (
        "distributed/ddp_training_epoch_mean.py",
        "ddp_training_epoch_mean",
        lambda source: re.sub(r", total / count, sync_dist=True\)", ", losses.mean())", source),
        {"report_lightning_20683"},
    ),
    # The writer reads the batch_indices Lightning passes: empty once a framework replaced the batch sampler.
    "writer-reads-batch-indices": (
        "distributed/ddp_predict_replaced_batch_sampler.py",
        "ddp_predict_replayed_indices",
        sub(r"itertools\.islice\(loader\.batch_sampler, len\(batches\)\)", "batch_indices[loaders.index(loader)]"),
        {"report_bionemo_recipes_482"},
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
    "several-losses-rank-0-mean": (
        "caching/several_losses_manual_optimization.py",
        "several_losses_manual",
        lambda source: sub(r", sync_dist=True\)", ")")(
            sub(r"reduce = self\.trainer\.strategy\.reduce", "reduce = lambda value, reduce_op: value")(source)
        ),
        {"report_gan_under_ddp"},  # DDP and a GAN's losses at once: each rank's own mean, rank 0's logged
    ),
    "uneven-predictions-kept-bfloat16": (
        "caching/uneven_last_batch.py",
        "uneven_predictions",
        sub(r"torch\.cat\(self\.predictions\)\.float\(\)", "torch.cat(self.predictions)"),
        {"bf16_hand_written_loss"},  # the loss at epoch end, outside autocast, in bfloat16
    ),
}


#: A small space for the tests below: the calls (the harness needs them) and one more axis, and a recipe that runs
#: the callback-side page's own class.
AXIS = """
[axis.calls]
title = "Trainer calls"
stages = ["train", "validation", "test", "predict"]
default = "fit"
[axis.calls.values]
fit = { label = "fit", runs = ["fit"], source = "https://lightning.ai/docs/pytorch/stable/common/trainer.html#fit" }
test = { label = "test alone", runs = ["test"], source = "https://lightning.ai/docs/pytorch/stable/" }

[axis.shuffle]
title = "Training order"
stages = ["train"]
default = "off"
[axis.shuffle.values]
off = { label = "in order", data = { shuffle = false }, source = "https://pytorch.org/docs/stable/data.html" }
on = { label = "shuffled", data = { shuffle = true }, source = "https://pytorch.org/docs/stable/data.html" }

[axis.train_step]
title = "What training_step returns"
stages = ["train"]
default = "loss-dict"
[axis.train_step.values]
loss-dict = { label = "a dict", step = { train = "loss-dict" }, source = "Lightning #1" }
none-batch-1 = { label = "None for batch 1", step = { train = "none-batch-1" }, source = "Lightning #2" }
"""
RECIPE = """
[recipe.r]
title = "Callback-side caching"
page = "recipes/page.py"
define = ["EpochLossCallback"]
module = "BoringModel"
callbacks = ["EpochLossCallback"]
stage = "train"
weighting = "batch"
metric = "train_loss_epoch_mean"
"""


def small_project(tmp_path: Path, page_source: str, recipe_extra: str = "") -> Path:
    """A tree with a matrix file of :data:`AXIS` and :data:`RECIPE` (plus ``recipe_extra``), one named scenario,
    and ``recipes/page.py``."""
    (tmp_path / "recipes").mkdir(parents=True, exist_ok=True)
    (tmp_path / "recipes" / "page.py").write_text(page_source, encoding="utf-8")
    named = '[scenario.defaults]\ntitle = "Trainer defaults"\n'
    (tmp_path / "matrix.toml").write_text(AXIS + named + RECIPE + recipe_extra, encoding="utf-8")
    return tmp_path


CALLBACK_PAGE = (ROOT / "gallery" / "core" / "callback_side_caching.py").read_text(encoding="utf-8")


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
    run = run_matrix(tmp_path, recipe, scenario_ids=sorted(catchers), named_only=True)
    assert run.returncode == 1, run.stdout + run.stderr
    caught = failing_scenarios(run.stderr, recipe)
    assert caught & catchers, f"{name}: caught by {sorted(caught)}, expected one of {sorted(catchers)}\n{run.stderr}"
    assert f"gallery/{page}" in run.stderr  # the error names the page the reader copies from


def test_a_declared_cell_must_fail_the_declared_way():
    """A declared error is that error (its ``match``), and a declared difference is one of value, not of count:
    otherwise a recipe that logs nothing, or raises something else, would pass as declared."""
    document = {
        "recipes": [{"id": "r", "page": "gallery/p.py"}],
        "cells": [
            {"recipe": "r", "scenario": "two", "expected": "raises", "outcome": "raises", "detail": "KeyError: 'x'",
             "declared": {"reason": "r", "see": "s", "match": "dataloader_idx"}},
            {"recipe": "r", "scenario": "ddp", "expected": "differs", "outcome": "differs", "relative_error": None,
             "detail": "0 values logged, 2 expected", "declared": {"reason": "r", "see": "s", "match": None}},
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
    """The unmutated pages: every cell -- the named scenarios' and the generated ones -- has its declared outcome
    (the failures above come from the mutations). The site's build ran the whole matrix on them; its results are
    read, not run again."""
    document = json.loads((site.outdir / ".doctrees" / "scenario-matrix.json").read_text(encoding="utf-8"))
    named, recipes = matrix
    assert [r["id"] for r in document["recipes"]] == [r.id for r in recipes]
    generated = document["covering"]["cells"]
    assert generated > 100
    assert len(document["cells"]) == len(recipes) * len(named) + generated
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
        ('[scenario.a]\nruns = ["train"]\n',
         r"matrix\.toml:1: \[scenario\.a\]: runs\[0\] = 'train' is not one of 'fit', 'validate', 'test', 'predict'"),
        ('[scenario.a]\nruns = []\n', r"\[scenario\.a\]: runs must list at least one Trainer call"),
        ('[scenario.a]\ntitle = "a"\n\n[scenario.b]\ntrainr = {}\n',
         r"matrix\.toml:4: \[scenario\.b\]: unknown key 'trainr' \(did you mean 'trainer'\?\)"),
        ('[recipe.r]\ntitle = "t"\n', r"\[recipe\.r\] lacks \['define', 'metric', 'module', 'page', 'stage'"),
        (
            '[recipe.r]\ntitle="t"\npage="p"\ndefine=[]\nmodule="M"\nstage="train"\nweighting="batch"\nmetric="m"\n'
            '[[recipe.r.declared]]\nvalues = {}\noutcome = "holds"\n',
            r"matrix\.toml:9: \[recipe\.r\] declared 1: outcome = 'holds' is not one of 'differs', 'raises'",
        ),
        (
            '[recipe.r]\ntitle="t"\npage="p"\ndefine=[]\nmodule="M"\nstage="train"\nweighting="batch"\nmetric="m"\n'
            '[[recipe.r.declared]]\nvalues = {}\noutcome = "differs"\nreason = "r"\nsee = "s"\nmach = "x"\n',
            r"\[recipe\.r\] declared 1: unknown key 'mach' \(did you mean 'match'\?\)",
        ),
        ('[axis.a]\ntitle = "A"\nstages = ["train"]\ndefault = "x"\nvalues = { x = { label = "x" } }\n',
         r"matrix\.toml:5: \[axis\.a\] value 'x' lacks \['source'\]"),
        (AXIS + '[[constraint]]\nvalues = { calls = "fit", shuffle = "sideways" }\nreason = "r"\n',
         r"constraint 1: unknown axis or values shuffle = \['sideways'\]"),
        (AXIS + RECIPE + '[[recipe.r.outside]]\naxis = "shuffle"\nvalues = ["off"]\nreason = "r"\nsee = "index"\n',
         r"\[recipe\.r\] outside: the default shuffle = 'off' must stay inside the domain"),
        ("[scenario\n", r"matrix\.toml: "),
        ('[scenario.a]\ndata = { batch_sampler = "megatron" }\n',
         r"\[scenario\.a\].*data\.batch_sampler = 'megatron' is not one of"),
        ('[[warning]]\nmessage = "m"\ncategory = "UserWarning"\nreason = "r"\n',
         r"\[\[warning\]\]: .* declared with their reasons in src/migration_guide/declared_warnings\.py"),
    ],
)  # fmt: skip
def test_malformed_matrix_names_file_and_table(tmp_path, text, message):
    path = tmp_path / "matrix.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(scenarios.MatrixError, match=message) as error:
        scenarios.load_space(path)
    assert str(path) in str(error.value)


def test_ground_truth_weightings_differ_on_an_uneven_last_batch():
    """The two weightings the matrix compares with are different numbers when the last batch is short."""
    import torch

    per_batch = [torch.tensor([1.0, 1.0, 1.0, 1.0]), torch.tensor([3.0])]
    assert scenarios._reduce(per_batch, "batch") == 2.0  # (1 + 3) / 2: each batch's mean counts once
    assert scenarios._reduce(per_batch, "sample") == pytest.approx(1.4)  # 7 / 5: each sample counts once


def test_results_are_rerun_when_a_recipe_page_changes(tmp_path):
    """The build re-uses the matrix's results only while nothing they depend on changed: editing a recipe's page,
    the matrix file, the checker or its data (the rewrite rows run its rewrite) changes the key the extension stores
    beside the results."""
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
    seen = {before, after_page, key()}
    assert len(seen) == 3
    # the rewrite rows run the checker's rewrite of their page: its code and the data it reads count too
    for path in ("src/lightning_migrate/checker/rules/_caching.py", "src/lightning_migrate/data/proven_rewrites.json"):
        edited = tree / path
        edited.write_text(edited.read_text(encoding="utf-8") + "\n", encoding="utf-8")
        assert key() not in seen, path
        seen.add(key())


def test_the_covering_set_holds_every_pair_of_values():
    """Every pair of values of two parameters (the recipe included) that some allowed cell can hold is in the
    covering set -- enumerated apart from the generator -- and no generated cell combines values that a constraint,
    a stage or a domain excludes."""
    declared = scenarios.load_space()
    # generated once per test run: the doc-test build of a `nox` run keeps it in the run's folder (build_mechanics);
    # a build `nox -s docs` left (the site the tests read) keeps it in its doctree folder, under the same key
    folder = run_cache.directory()
    name = f"covering-set-{space.generator_key(declared)}.json"
    built = Path(os.environ.get("GUIDE_SITE_BUILD") or ROOT / "_build" / "html") / ".doctrees" / name
    if folder is not None and not (folder / name).exists() and built.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(built, folder / name)
    cells = scenarios.cached_covering_set(declared, folder)
    assert len(cells) > len(declared.recipes) * 5
    missing = scenarios.coverable_pairs(declared) - scenarios.covered_pairs(cells)
    assert not missing, sorted(missing)[:20]
    recipes = {r.id: r for r in declared.recipes}
    for rid, scenario in cells:
        assert space.allowed(declared, {space.RECIPE_AXIS: rid, **scenario.values}), (rid, scenario.values)
        assert recipes[rid].expected(scenario) == "holds", (rid, scenario.values)  # a pair is proven where it holds
    assert len({s.id for _, s in cells}) == len(cells)


def test_every_declared_trap_has_a_cell_that_shows_it():
    """The covering set keeps clear of the declared traps; each trap declared with values is shown by a named
    scenario or by its own cell, whose expected outcome is the trap's (so the build checks that it still fails the
    declared way); a declaration that can never apply is an error naming it."""
    declared = scenarios.load_space()
    traps = scenarios.trap_cells(declared)
    recipes = {r.id: r for r in declared.recipes}
    for recipe in declared.recipes:
        for number, entry in enumerate(recipe.declared, 1):
            if not entry.values or not entry.here():  # a trap of other releases runs in their sessions only
                continue
            shown = [s for s in declared.scenarios if recipe.declared_for(s) is entry]
            shown += [s for rid, s in traps if rid == recipe.id and s.id == f"trap-{recipe.id}-{number}"]
            assert shown, (recipe.id, number)
    for rid, scenario in traps:
        assert recipes[rid].expected(scenario) == recipes[rid].declared_for(scenario).outcome != "holds"
    assert len({s.id for _, s in traps}) == len(traps) > 10
    never = dataclasses.replace(
        recipes["callback_side"],
        declared=(
            dataclasses.replace(
                recipes["callback_side"].declared[0], values={"train_step": frozenset({"manual-no-loss"})}
            ),
        ),
    )  # manual-no-loss is outside callback_side's domain
    unreachable = dataclasses.replace(declared, recipes=(never,))
    with pytest.raises(scenarios.MatrixError, match=r"\[recipe\.callback_side\] declaration 1 .* can never apply"):
        scenarios.trap_cells(unreachable)


def test_the_same_axes_give_the_same_covering_set_and_a_new_value_a_new_one(tmp_path):
    project = small_project(tmp_path, CALLBACK_PAGE)
    small = scenarios.load_space(project / "matrix.toml")
    first, second = scenarios.covering_set(small), scenarios.covering_set(small)
    assert [(r, s.values) for r, s in first] == [(r, s.values) for r, s in second]
    assert space.generator_key(small) == space.generator_key(scenarios.load_space(project / "matrix.toml"))
    matrix = project / "matrix.toml"
    matrix.write_text(matrix.read_text().replace('on = { label = "shuffled"', 'sorted = { label = "sorted", '
                      'source = "Lightning #3" }\non = { label = "shuffled"'), encoding="utf-8")  # fmt: skip
    wider = scenarios.load_space(matrix)
    assert space.generator_key(wider) != space.generator_key(small)
    assert ("shuffle", "sorted") in {
        item for pair in scenarios.covered_pairs(scenarios.covering_set(wider)) for item in pair
    }


def test_a_cached_covering_set_is_read_back_while_its_key_holds(tmp_path):
    project = small_project(tmp_path / "p", CALLBACK_PAGE)
    small = scenarios.load_space(project / "matrix.toml")
    cells = scenarios.cached_covering_set(small, tmp_path / "cache")
    [cached] = (tmp_path / "cache").glob("covering-set-*.json")
    assert space.generator_key(small) in cached.name
    again = scenarios.cached_covering_set(small, tmp_path / "cache")
    assert [(r, s.id, s.values) for r, s in again] == [(r, s.id, s.values) for r, s in cells]


def test_a_kept_covering_set_is_read_while_its_key_holds_and_ignored_once_the_space_changes(tmp_path, monkeypatch):
    """The checkout keeps the covering set beside the matrix file (a build then skips the generator, about 250 s);
    a space that changed has another key, so the kept file is ignored and the set generated again."""
    project = small_project(tmp_path / "p", CALLBACK_PAGE)
    matrix = project / "matrix.toml"
    small = scenarios.load_space(matrix)
    path, changed = scenarios.keep_covering_set(small)
    assert (path, changed) == (project / "matrix.covering-set.json", True)
    assert scenarios.keep_covering_set(small) == (path, False)  # the same space: the file stays as it was
    generated = [(r, s.id, s.values) for r, s in scenarios.covering_set(small)]

    def refuse(*args, **kwargs):
        raise AssertionError("generated although the kept covering set is this space's")

    with monkeypatch.context() as patched:
        patched.setattr(space, "covering_set", refuse)
        kept = [(r, s.id, s.values) for r, s in scenarios.cached_covering_set(small, None)]
    assert kept == generated
    matrix.write_text(matrix.read_text().replace('on = { label = "shuffled"', 'sorted = { label = "sorted", '
                      'source = "Lightning #3" }\non = { label = "shuffled"'), encoding="utf-8")  # fmt: skip
    wider = scenarios.load_space(matrix)
    values = {item for pair in scenarios.covered_pairs(scenarios.cached_covering_set(wider, None)) for item in pair}
    assert ("shuffle", "sorted") in values  # generated for the new space, not read from the stale file


def test_a_kept_covering_set_that_is_not_one_names_its_file(tmp_path):
    project = small_project(tmp_path / "p", CALLBACK_PAGE)
    small = scenarios.load_space(project / "matrix.toml")
    (project / "matrix.covering-set.json").write_text('{"key": "x", "cells": []', encoding="utf-8")
    with pytest.raises(scenarios.MatrixError, match=r"matrix\.covering-set\.json: not a covering set kept by .*"
                       r"--keep-covering-set"):  # fmt: skip
        scenarios.cached_covering_set(small, None)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda cells: cells[1:], r"pairs of values in no cell"),
        (lambda cells: [[cells[0][0], "nope", cells[0][2]], *cells[1:]], r"no recipe 'nope'"),
        (lambda cells: [cells[0], [cells[0][0], *cells[1][1:]], *cells[2:]], r"the cell id 'pairs-001' twice"),
        (lambda cells: [[*cells[0][:2], {**cells[0][2], "calls": "test"}], *cells[1:]], r"not a cell expected to hold"),
        (lambda cells: [[*cells[0][:2], {**cells[0][2], "shuffle": "sorted"}], *cells[1:]], r"unknown axis value"),
    ],
    ids=["cell-removed", "unknown-recipe", "id-twice", "excluded-cell", "unknown-value"],
)
def test_a_kept_covering_set_edited_by_hand_is_refused_and_written_again(tmp_path, edit, message):
    """A kept file under the right key whose cells are not a covering set of the space is an error naming the file
    and the cause -- never a run that silently loses pairs -- and ``keep_covering_set`` (the command the error names)
    replaces it with the generated set."""
    project = small_project(tmp_path / "p", CALLBACK_PAGE)
    small = scenarios.load_space(project / "matrix.toml")
    path, _ = scenarios.keep_covering_set(small)
    document = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**document, "cells": edit(document["cells"])}), encoding="utf-8")
    with pytest.raises(scenarios.MatrixError, match=rf"matrix\.covering-set\.json: not a covering set of .*{message}"):
        scenarios.cached_covering_set(small, None)
    assert scenarios.keep_covering_set(small) == (path, True)
    assert json.loads(path.read_text(encoding="utf-8")) == document


def test_the_checkout_keeps_the_covering_set_of_its_space():
    """Like a lock file: the kept covering set is the one of ``data/scenarios.toml`` and the installed generator
    and Lightning, so the build reads it instead of generating it (a stale one would be ignored, not run)."""
    declared = scenarios.load_space()
    path = scenarios.kept_covering_set_file(declared)
    kept = json.loads(path.read_text(encoding="utf-8"))
    assert kept["key"] == space.generator_key(declared), (
        f"{path} holds the covering set of another space (or another covertable or Lightning): write it again with "
        "`PYTHONPATH=src python -m migration_guide.scenarios --keep-covering-set` (about 250 s) and commit it"
    )


def scenario_of(values: dict, **extra) -> space.Scenario:
    return scenarios.load_space().scenario("t", values, "t", **extra)


@pytest.mark.parametrize(
    ("values", "extra", "stage", "indices"),
    [
        ({}, {}, "validation", list(range(24))),
        # DistributedSampler pads 21 samples to 22 with sample 0; each sample still counts once
        ({"strategy": "ddp-2"}, {"data": {"val": 21}}, "validation", list(range(21))),
        # each rank runs its first 2 batches of 8: rank 0 reads 0, 2, ..., 30, rank 1 reads 1, 3, ..., 31
        ({"strategy": "ddp-2-own-split", "limits": "int"}, {"data": {"test": 40}}, "test", list(range(32))),
        ({"strategy": "ddp-3-own-split", "limits": "int"}, {}, "predict", list(range(24))),
        ({"limits": "fraction"}, {}, "validation", list(range(8))),  # int(3 batches * 0.5) = 1 batch
        ({"length": "fast-dev-run"}, {}, "test", list(range(8))),
    ],
)  # fmt: skip
def test_the_ground_truth_reads_each_evaluated_sample_once(values, extra, stage, indices):
    scenario = scenario_of(values, **extra)
    size = scenario.data[{"validation": "val", "test": "test", "predict": "predict"}[stage]]
    assert truth.evaluated_indices(size, scenario, stage) == indices


OLD_HOOK_PAGE = textwrap.dedent(
    """
    import lightning.pytorch as pl
    import torch


    class EpochLossCallback(pl.Callback):
        def __init__(self):
            self.losses = []

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.losses.append(outputs["loss"].detach())

        def on_train_epoch_end(self, trainer, pl_module, outputs):
            pl_module.log("train_loss_epoch_mean", torch.stack(self.losses).mean())
            self.losses.clear()
    """
)


def drop_outputs_argument(text: str, filename: str) -> str:
    """A stand-in for the checker's rewrite: the removed ``outputs`` argument of ``on_train_epoch_end`` goes."""
    return text.replace("def on_train_epoch_end(self, trainer, pl_module, outputs):",
                        "def on_train_epoch_end(self, trainer, pl_module):")  # fmt: skip


def test_a_recipe_row_runs_the_code_its_transform_makes(tmp_path, monkeypatch):
    """``transform = "lightning-migrate"``: the cell runs what the transform makes of the file (here a test-local
    stand-in for ``lightning_migrate.checker.rewrite_source``); the file as written still fails as old code does."""
    project = small_project(tmp_path, OLD_HOOK_PAGE, 'transform = "lightning-migrate"\n')
    monkeypatch.setitem(harness.TRANSFORMS, "lightning-migrate", f"{__name__}:drop_outputs_argument")
    small = scenarios.load_space(project / "matrix.toml")
    [recipe], [scenario] = small.recipes, small.scenarios
    assert recipe.transform == "lightning-migrate"
    rewritten = scenarios.cell_result(recipe, scenario, project)
    assert rewritten["outcome"] == "holds", rewritten
    as_written = scenarios.cell_result(dataclasses.replace(recipe, transform=None), scenario, project)
    assert as_written["outcome"] == "raises"
    assert "on_train_epoch_end() missing 1 required positional argument: 'outputs'" in as_written["detail"]
    monkeypatch.setitem(harness.TRANSFORMS, "lightning-migrate", "lightning_migrate.checker:no_such_function")
    with pytest.raises(scenarios.MatrixError, match=r"page\.py: transform 'lightning-migrate' needs"):
        scenarios.cell_result(recipe, scenario, project)


def test_explore_prints_the_named_scenario_to_add_for_an_unexpected_cell(tmp_path):
    """A recipe without the empty-outputs guard, declared to hold everywhere: exploration finds a cell where a
    step returns None, and prints the table that makes it a named scenario."""
    import io

    from migration_guide.scenarios import explore

    project = small_project(tmp_path, OLD_HOOK_PAGE.replace(", outputs):", "):"))
    small = scenarios.load_space(project / "matrix.toml")
    out = io.StringIO()
    ticks = iter([0.0, 0.0])  # the start and the first check of the budget; then an hour later: one batch runs
    clock = lambda: next(ticks, 3600.0)  # noqa: E731
    ran, found = explore.explore(small, project, minutes=1, seed=3, jobs=1, out=out, clock=clock)
    assert (ran, found) == (4, 3), out.getvalue()  # seed 3 draws none-batch-1 three times in four
    text = out.getvalue()
    assert "expected holds, got raises: KeyError: 'loss'" in text
    table = text.split("add to scenarios.toml:\n", 1)[1]
    assert re.search(
        r'^    \[scenario\.random_3_\d+\]\n    title = ".*"\n    values = \{ .*train_step = "none-batch-1"', table
    )


DOMAIN_CONF = f"""
import sys
sys.path[:0] = [{str(ROOT / "docs" / "_ext")!r}, {str(ROOT / "src")!r}]
extensions = ["guide.scenario_matrix"]
scenario_matrix_file = "matrix.toml"
scenario_matrix_root = "."
"""


def test_the_recipe_domain_box_says_where_a_recipe_holds_and_what_to_use_elsewhere(tmp_path):
    """``.. recipe-domain::`` on a two-page project: the domain from this build's cells, the value outside it with
    its reason and the page to use, and a link to the recipe's section of the matrix page."""
    outside = (
        '[[recipe.r.outside]]\naxis = "shuffle"\nvalues = ["on"]\nreason = "a reason from the file"\nsee = "matrix"\n'
    )
    project = small_project(tmp_path, CALLBACK_PAGE, outside)
    (project / "conf.py").write_text(DOMAIN_CONF.replace('"matrix.toml"', repr(str(project / "matrix.toml")))
                                     .replace('"."', repr(str(project))), encoding="utf-8")  # fmt: skip
    (project / "index.rst").write_text(
        "Recipe\n======\n\n.. recipe-domain:: r\n\n.. toctree::\n\n   matrix\n", encoding="utf-8"
    )
    (project / "matrix.rst").write_text("Matrix\n======\n\n.. scenario-matrix::\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), CI="true")
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-b",
        "html",
        str(project),
        str(project / "_build"),
    ]
    build = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False)
    assert build.returncode == 0, (build.stdout + build.stderr)[-5000:]
    page = (project / "_build" / "index.html").read_text(encoding="utf-8")
    box = page[page.index('class="recipe-domain admonition"') :]
    box = box[: box.index("toctree-wrapper")]
    assert "Where it works" in box and "Works with" in box and "Not with" in box
    summary, _, detail = box.partition("sd-dropdown")  # the detail is folded, after the short summary
    assert "shuffled" in summary and "a reason from the file" not in summary  # what not, short; why, folded
    assert "a reason from the file" in detail
    assert "Training order: in order" in detail  # the value inside the domain, proven by runs that held
    assert re.search(r"Tested in \d+ runs on Lightning", detail)
    assert 'href="matrix.html"' in box  # the page to use instead
    assert 'href="matrix.html#recipe-r"' in box  # every cell of the recipe
    matrix = (project / "_build" / "matrix.html").read_text(encoding="utf-8")
    assert 'id="recipe-r"' in matrix and "Values that cannot combine" not in matrix.split('id="recipe-r"')[0]


@pytest.fixture(scope="module")
def pandoc_options():
    """conf.py's ``sphinx_gallery_conf["pypandoc"]``, with the site address the notebook filter needs."""
    options = runpy.run_path(str(ROOT / "conf.py"))["sphinx_gallery_conf"]["pypandoc"]
    return {**options, "extra_args": [*options["extra_args"], "--metadata=html_baseurl:https://example.org/guide/"]}


def test_in_a_notebook_the_recipe_domain_box_is_a_link_to_the_matrix(pandoc_options):
    markdown = pypandoc.convert_text(
        "Before you copy it:\n\n.. recipe-domain:: callback_side predict_writer\n", to="md", format="rst",
        **pandoc_options,
    )  # fmt: skip
    page = "https://example.org/guide/reference/scenarios.html"
    assert markdown.strip() == (
        "Before you copy it:\n\nWhere this recipe works, and what to use where it does not: "
        f"[the tested configurations (callback_side)]({page}#recipe-callback-side), "
        f"[the tested configurations (predict_writer)]({page}#recipe-predict-writer)."
    )


def test_a_crash_with_no_point_to_happen_at_does_not_apply():
    """A crash-and-rerun cell whose first fit ends (max_steps=7: two optimizer steps per batch) before its first
    validation outside the sanity check has no validation batch to crash at: the run finds the scenario outside the
    recipe's stage (exploration, seed 3, found it as an error). A trap declared for that cell still fails: a cell
    that stops showing its trap never passes as not applicable."""
    declared = scenarios.load_space()
    recipe = next(r for r in declared.recipes if r.id == "validation")
    values = {"calls": "crash-rerun", "train_step": "manual-two-optimizers", "val_schedule": "every-2-epochs",
              "limits": "int", "length": "max-steps-7"}  # fmt: skip
    scenario = declared.scenario("no-crash-point", values)
    assert recipe.expected(scenario) == "holds"
    accepted = space.declared_warnings()
    result = scenarios.cell_result(recipe, scenario, declared_warnings=accepted)
    assert (result["outcome"], result["expected"]) == ("not applicable", "not applicable")
    assert result["detail"] == harness.NO_CRASH_POINT.format(stage="validation")
    document = {"recipes": [{"id": "validation", "page": recipe.page}], "cells": [result]}
    assert scenarios.failures(document) == []

    trap = space.Declared("differs", "a trap", "index", values={"calls": frozenset({"crash-rerun"})})
    trapped = scenarios.cell_result(dataclasses.replace(recipe, declared=(trap,)), scenario, declared_warnings=accepted)
    assert (trapped["outcome"], trapped["expected"]) == ("not applicable", "differs")
    assert scenarios.failures({**document, "cells": [trapped]}) == [
        f"validation × no-crash-point: expected differs, got not applicable: {result['detail']} [{recipe.page}]"
    ]


def test_a_box_over_recipes_of_one_page_names_them_without_the_page():
    from guide.scenario_matrix import box_title

    assert box_title(["Which replacement: the callback", "Which replacement: the module"]) == (
        "Where it works: the callback and the module"
    )
    assert box_title(["Callback-side caching", "Predict: the writer"]) == (
        "Where it works: Callback-side caching and Predict: the writer"
    )
    assert box_title(["Callback-side caching"]) == "Where it works"


def test_exploration_learns_nothing_from_a_cell_that_never_reaches_the_recipes_stage():
    """A drawn cell whose validation never runs outside the sanity check (exploration, seed 4: a declared bf16 trap
    of a validation recipe, in a fit that ends at max_steps first) is not a failure of the declaration; the same
    cell in the build's own set would be."""
    from migration_guide.scenarios import explore

    vacuous = {"recipe": "r", "scenario": "random-4-2054", "expected": "differs", "outcome": "not applicable",
               "detail": harness.NO_STAGE_RUN.format(stage="validation"), "in_run": True}  # fmt: skip
    document = {"recipes": [{"id": "r", "page": "gallery/p.py"}], "cells": [vacuous]}
    assert explore._unexpected(document) == []
    assert scenarios.failures(document) == [
        "r × random-4-2054: expected differs, got not applicable: the run never reaches a validation epoch outside "
        "the sanity check [gallery/p.py]"
    ]


def _with_referrals(text: str, callback_see: str, module_see: str) -> str:
    """The matrix file with the manual-no-loss referrals of the callback-side recipe and of the recipe whose module
    reads ``output["loss"]`` of its parent's step (the hook-order page's separate caches) set."""
    for rid, see in (("callback_side", callback_see), ("separate_caches_train", module_see)):
        head = f'[[recipe.{rid}.outside]]\naxis = "train_step"\nvalues = ["manual-no-loss", "manual-gan-losses"]\n'
        start = text.index(head)
        at = text.index("\nsee = ", start)
        end = text.index("\n", at + 1)
        text = text[:at] + f'\nsee = "{see}"' + text[end:]
    return text


def test_a_circle_of_referrals_fails_naming_both_recipes(tmp_path):
    """Lightning #17801's configuration (a GAN's step returns ``{"g_loss", "d_loss"}``): the callback recipe sends
    the reader to the page whose module reads ``output["loss"]`` of its parent's step, and that recipe back, neither
    holding there. Such a circle fails; the file as committed sends both to the page of several losses, whose recipe
    holds there."""
    text = space.MATRIX_FILE.read_text(encoding="utf-8")
    circle = tmp_path / "matrix.toml"
    reader = "examples/caching/hook_order"
    circle.write_text(_with_referrals(text, reader, "examples/core/callback_side_caching"), encoding="utf-8")
    with pytest.raises(space.MatrixError) as raised:
        space.load_space(circle)
    message = str(raised.value)
    assert (
        f"[recipe.callback_side] sends train_step in ['manual-no-loss', 'manual-gan-losses'] to {reader}, where no "
        "recipe holds it (a recipe there sends it back to examples/core/callback_side_caching: a circle)"
    ) in message
    assert (
        "[recipe.separate_caches_train] sends train_step in ['manual-no-loss', 'manual-gan-losses'] to "
        "examples/core/callback_side_caching, where no recipe holds it"
    ) in message
    loaded = space.load_space()
    gan = "examples/caching/several_losses_manual_optimization"
    assert {r.id for r in loaded.recipes if space.recipe_docname(r.page) == gan} == {"several_losses_manual"}


def _replaced(tmp_path: Path, *pairs: tuple[str, str]) -> Path:
    """The committed matrix file with each ``(old, new)`` text replaced once (each must be there)."""
    text = space.MATRIX_FILE.read_text(encoding="utf-8")
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / "matrix.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _load_problems(path: Path) -> str:
    with pytest.raises(space.MatrixError) as raised:
        space.load_space(path)
    return str(raised.value).replace(f"{path}: ", "")


CALLBACK_MONITORING_TRAP = (
    'values = { train_step = "manual-nothing", callbacks = "monitoring" }\noutcome = "raises"\n'
    'match = "which is not available"\nreason = ":claim:`Empty-outputs-for-none-and-manual`, so the callback has no '
    'loss to log, and :claim:`early-stopping-refuses-unlogged-value`. Cache each loss in training_step"\n'
)


def test_a_trap_declared_with_values_sends_the_reader_where_a_recipe_holds_them(tmp_path):
    """The empty-outputs fix's trap {manual optimization returning nothing, the monitoring callbacks} sent to the page
    whose module reads ``output["loss"]`` of its parent's step, which is outside a step returning nothing and sends
    the reader back: a circle, named; the page of several losses, whose recipe caches its losses in training_step,
    holds there."""
    gan, module, callback = (
        "examples/caching/several_losses_manual_optimization",
        "examples/caching/hook_order",
        "examples/pitfalls/empty_outputs",
    )
    trap = f'{CALLBACK_MONITORING_TRAP}see = "{gan}"'
    reader_entry = '[[recipe.separate_caches_train.outside]]\naxis = "train_step"\nvalues = ["manual-nothing"]\n'
    text = space.MATRIX_FILE.read_text(encoding="utf-8")
    start = text.index(reader_entry)
    entry = text[start : text.index("\n\n", start)]
    circle = _replaced(tmp_path, (trap, trap.replace(gan, module)), (entry, entry.replace(gan, callback)))
    message = _load_problems(circle)
    assert (
        "[recipe.empty_outputs_fix] sends train_step = 'manual-nothing' with callbacks = 'monitoring' to "
        f"{module}, where no recipe holds it (a recipe there sends it back to "
        "examples/pitfalls/empty_outputs: a circle)"
    ) in message
    assert message.count(f"to {module}, where no recipe holds it") == 1  # the trap's; the file's other referrals
    # ... and the module recipe's own, back (two settings with DDP at once are named as well)
    assert (
        f"[recipe.separate_caches_train] sends train_step = 'manual-nothing' to {callback}, where no recipe holds it"
    ) not in message  # a callback that reads outputs holds there, without the monitoring callbacks


DDP_SEVERAL_LOSSES = (
    '\n[[recipe.several_losses_manual.outside]]\naxis = "strategy"\n'
    'values = ["ddp-2", "ddp-3", "ddp-2-own-split", "ddp-3-own-split"]\nreason = "r"\n'
    'see = "examples/distributed/ddp_training_epoch_mean"\n'
)


def test_two_outside_values_at_once_need_a_page_that_holds_both(tmp_path):
    """A reader with DDP and a GAN's ``{"g_loss", "d_loss"}`` is outside the callback recipe on two settings at once:
    of the two pages it names, the DDP page reads ``"loss"`` and the several-losses page held on one process only
    before it added up every rank's sums. Then the file fails naming the recipe, both values and both pages."""
    head = '[[recipe.several_losses_manual.outside]]\naxis = "accumulation"'
    one_process = _replaced(tmp_path, (head, DDP_SEVERAL_LOSSES.lstrip("\n") + "\n" + head))
    message = _load_problems(one_process)
    assert (
        "[recipe.callback_side] sends strategy in ['ddp-2', 'ddp-3', 'ddp-2-own-split', 'ddp-3-own-split'] with "
        "train_step in ['manual-no-loss', 'manual-gan-losses', 'manual-nothing'] to "
        "examples/distributed/ddp_training_epoch_mean and "
        "examples/caching/several_losses_manual_optimization, where no recipe holds them together"
    ) in message
    # as committed: the several-losses page holds there, and the callback page says so beside that referral
    together = space.referrals_by_recipe(space.load_space())["callback_side"]["together"]
    gan = "examples/caching/several_losses_manual_optimization"
    assert {"values": {"strategy": "ddp-3", "train_step": "manual-gan-losses"}, "see": gan} in together
    assert len(together) == 12 and {t["see"] for t in together} == {gan}  # 4 DDP values, 3 steps without "loss"


def test_a_gap_is_declared_where_no_page_holds_and_only_there(tmp_path):
    """A run resumed in an epoch whose remaining steps all return None, with the monitoring callbacks: the callback
    recipes send it to the interrupted-runs page, where no recipe of the matrix is shown. The declared gap says so;
    without it the file fails, naming each recipe and the values, and a gap no referral needs fails too."""
    text = space.MATRIX_FILE.read_text(encoding="utf-8")
    start = text.index('[[gap]]\nvalues = { calls = "resume-mid-epoch", train_step = "none-batch-1"')
    without = _replaced(tmp_path, (text[start : text.index("\n", text.index("\nreason = ", start) + 1)], ""))
    message = _load_problems(without)
    assert (
        "[recipe.callback_side] sends calls = 'resume-mid-epoch' with train_step = 'none-batch-1' with limits = "
        "'fraction' with callbacks = 'monitoring' to examples/pitfalls/interrupted_and_resumed_runs, where no recipe "
        "of the matrix is shown"
    ) in message
    unneeded = '\n[[gap]]\nvalues = { strategy = "ddp-2", train_step = "manual-gan-losses" }\nreason = "r"\n'
    stale = tmp_path / "stale.toml"
    stale.write_text(space.MATRIX_FILE.read_text(encoding="utf-8") + unneeded, encoding="utf-8")
    assert re.search(r"stale\.toml:\d+: gap 2: no referral needs it .*: remove it", _load_problems(stale))
    gaps = space.referrals_by_recipe(space.load_space())["callback_side"]["gaps"]
    assert [g["values"] for g in gaps] == [
        {
            "calls": ["resume-mid-epoch"],
            "train_step": ["none-batch-1"],
            "limits": ["fraction"],
            "callbacks": ["monitoring"],
        }
    ]


def test_every_referral_of_the_committed_file_is_proven_or_a_declared_gap():
    """Every configuration the committed file sends a reader away with (one outside value, two at once, a trap) lands
    on a page that holds there, or on a declared gap; the check runs at every load, so its cost is printed."""
    import time

    loaded = space.load_space()
    started = time.process_time()
    found = space.referrals(loaded)
    seconds = time.process_time() - started
    assert {r.kind for r in found} == {"outside", "together", "trap"}
    assert [r for r in found if not r.proven and r.gap is None] == []
    gapped = {(r.recipe, tuple(r.values)) for r in found if not r.proven}
    assert ("callback_side", ("calls", "train_step", "limits", "callbacks")) in gapped
    print(f"{len(found)} referrals followed in {seconds:.3f} s of processor time; {len(gapped)} met a declared gap")


def test_every_referral_of_the_matrix_file_names_a_page_of_recipes():
    """The referral check covers every referral of the committed file: none names a page without recipes."""
    loaded = space.load_space()
    pages = {space.recipe_docname(r.page) for r in loaded.recipes}
    unchecked = sorted({o.see for r in loaded.recipes for o in r.outside} - pages)
    assert unchecked == []


def test_a_best_value_of_a_resumed_run_is_the_best_over_every_run():
    """The truth of a value carried across runs (``over_runs``) counts the validations an interrupted run made before
    its checkpoint: with the weights that gave the lowest loss before the checkpoint, the resumed run's best is that
    loss, not the resumed run's own; a value of each run's own (no ``over_runs``) is the resumed run's."""
    import torch
    from lightning.pytorch.demos.boring_classes import BoringModel

    loaded = scenarios.load_space()
    best = next(r for r in loaded.recipes if r.id == "sanity_guarded_best")
    own = next(r for r in loaded.recipes if r.id == "sanity_guarded")
    scenario = loaded.scenario("t", {"calls": "resume-mid-epoch"})
    datasets = harness.make_datasets(scenario.data)
    good = BoringModel()
    with torch.no_grad():
        good.layer.weight.zero_()
        good.layer.bias.fill_(1.0)  # predicts ones: loss 0
    worse = BoringModel()
    with torch.no_grad():
        worse.layer.weight.zero_()
        worse.layer.bias.fill_(3.0)  # predicts threes: loss 4

    def entry(model):
        return {"weights": model.state_dict(), "datasets": ["val"], "trainer": 1, "fn": "fit"}

    record = {"validation": [entry(worse)]}
    before = [entry(good)]
    expected, tags = truth.ground_truth(best, scenario, record, datasets, harness.SKIPPED, before=before)
    assert (expected, tags) == ([{"best_val_loss": 0.0}], [(1, "fit")])
    assert truth.ground_truth(best, scenario, record, datasets, harness.SKIPPED)[0] == [{"best_val_loss": 4.0}]
    assert truth.ground_truth(own, scenario, record, datasets, harness.SKIPPED, before=before)[0] == [{"val_loss": 4.0}]


def test_a_loss_written_by_hand_is_bfloat16_under_bf16_mixed_and_holds_within_two_roundings():
    """``((p - y) ** 2).mean()`` under bf16-mixed stays bfloat16: the callback-side cache of it (the scenario's step
    computes it; the module-side recipe's own step computes its own loss) is farther from the float32 truth than
    float32's tolerance, and within the declared two bfloat16 roundings; at 32-true it holds at float32's."""
    loaded = scenarios.load_space()
    recipe = next(r for r in loaded.recipes if r.id == "callback_side")
    accepted = space.declared_warnings()
    bf16 = next(s for s in loaded.scenarios if s.id == "bf16_hand_written_loss")
    result = scenarios.cell_result(recipe, bf16, declared_warnings=accepted)
    assert result["outcome"] == "holds", result
    assert harness.REL_TOL < result["relative_error"] <= harness.BF16_HAND_LOSS_REL_TOL
    full = loaded.scenario("hand-loss-32", {"train_step": "hand-loss"})
    result = scenarios.cell_result(recipe, full, declared_warnings=accepted)
    assert result["outcome"] == "holds" and result["relative_error"] <= harness.REL_TOL, result


def test_a_value_computed_in_bfloat16_differs_even_where_its_rounding_lands_near_the_truth():
    """The extra-keys rewrite keeps bfloat16 predictions under bf16-mixed and computes their loss in bfloat16 (a
    declared trap). Exploration (seed 33) drew a cell where that bfloat16 mean, 1.0, lies within float32's tolerance
    of the truth: it is still a value computed in bfloat16, and the cell differs, as declared; at 32-true it holds."""
    loaded = scenarios.load_space()
    recipe = next(r for r in loaded.recipes if r.id == "rewrite_training_epoch_end_extra_keys")
    values = {
        "train_step": "manual",
        "eval_step": "none",
        "dataset": "uneven",
        "train_loaders": "2",
        "val_schedule": "interval-2",
        "sanity": "all",
        "limits": "int",
    }
    accepted = space.declared_warnings()
    bf16 = loaded.scenario("near", {**values, "precision": "bf16-mixed"})
    result = scenarios.cell_result(recipe, bf16, declared_warnings=accepted)
    assert result["outcome"] == "differs", result
    assert result["relative_error"] <= harness.REL_TOL and "a bfloat16 number" in result["detail"], result
    full = scenarios.cell_result(recipe, loaded.scenario("full", values), declared_warnings=accepted)
    assert full["outcome"] == "holds", full


def test_a_training_value_under_ddp_is_compared_with_every_ranks_batches():
    """Lightning #20683: under DDP a module-side cache logs rank 0's own mean. The truth of a training value spans
    every rank's batches (each rank keeps its record), so that recipe, run there anyway, differs, and the recipe that
    adds up every rank's sums and counts holds."""
    loaded = scenarios.load_space()
    recipes = {r.id: r for r in loaded.recipes}
    report = next(s for s in loaded.scenarios if s.id == "report_lightning_20683")
    assert recipes["module_side"].expected(report) == "not applicable"
    accepted = space.declared_warnings()
    with harness.quiet(accepted):
        rank_0 = harness.run_cell(dataclasses.replace(recipes["module_side"], outside=()), report)
        every_rank = harness.run_cell(recipes["ddp_training_epoch_mean"], report)
    assert rank_0["outcome"] == "differs" and rank_0["relative_error"] > 1e-3, rank_0
    assert every_rank["outcome"] == "holds", every_rank


def test_a_ddp_cell_picks_a_free_port_of_its_own_and_leaves_the_environment_as_it_found_it(monkeypatch):
    """Lightning's launch leaves ``MASTER_PORT`` in the environment of the process that ran the Trainer: a matrix
    started after a DDP cell in the same process ran every worker on that one port (``EADDRINUSE``). A cell runs
    without it -- here the environment names a port another socket holds -- and leaves the environment as it was."""
    import socket

    loaded = scenarios.load_space()
    recipe = next(r for r in loaded.recipes if r.id == "ddp_dataset_mean")
    scenario = next(s for s in loaded.scenarios if s.id == "ddp_odd_dataset")
    with harness.quiet(space.declared_warnings()), socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        held = str(taken.getsockname()[1])
        for variable in ("MASTER_PORT", "STANDALONE_PORT"):  # the second: Lightning's free-port search returns it
            monkeypatch.setenv(variable, held)
            assert harness.run_cell(recipe, scenario)["outcome"] == "holds", variable
            assert os.environ[variable] == held
            monkeypatch.delenv(variable)
        assert harness.run_cell(recipe, scenario)["outcome"] == "holds"
    assert "MASTER_PORT" not in os.environ


def test_the_ground_truth_record_joins_every_ranks_training_batches(tmp_path):
    import torch

    file = tmp_path / "truth1.pt"
    torch.save({"train": [{"batch_idx": 0}], "validation": [{"fn": "fit"}]}, file)
    torch.save({"train": [{"batch_idx": 0}, {"batch_idx": 1}], "validation": []}, harness.rank_file(file, 1))
    record = harness.load_record(file, 2)
    assert [(e["rank"], e["batch_idx"]) for e in record["train"]] == [(0, 0), (1, 0), (1, 1)]
    assert record["validation"] == [{"fn": "fit"}]  # evaluation runs stay rank 0's
    with pytest.raises(RuntimeError, match=r"truth1\.rank2\.pt: rank 2 of 3 left no ground-truth record"):
        harness.load_record(file, 3)


def test_the_dataset_values_leave_every_remainder_over_2_and_3_ranks():
    """DistributedSampler repeats ``-size % ranks`` samples: the map-style dataset values give validation sets of
    every remainder modulo 2 and modulo 3 (with 3 ranks and 3k + 1 samples, two repeats), and the covering set meets
    each dataset value with each number of processes."""
    loaded = scenarios.load_space()
    map_style = [v for v, value in loaded.axes["dataset"].values.items() if value.settings["data"]["kind"] == "map"]
    for world in (2, 3):
        sizes = {loaded.scenario("t", {"dataset": v, "strategy": f"ddp-{world}"}).data["val"] for v in map_style}
        assert {size % world for size in sizes} == set(range(world)), (world, sizes)
    pairs = scenarios.coverable_pairs(loaded)
    assert {(("dataset", v), ("strategy", f"ddp-{w}")) for v in map_style for w in (2, 3)} <= pairs


def test_a_framework_batch_sampler_deals_blocks_of_each_global_batch():
    """NVIDIA-BioNeMo/bionemo-recipes #482's framework replaces the batch sampler: rank r reads the r-th block of each
    global batch; the ranks' batches hold every sample once, in shares of different lengths."""
    *_, framework = harness._data_classes()
    dealt = [list(framework(21, 4, rank, 2)) for rank in range(2)]
    assert dealt == [[[0, 1, 2, 3], [8, 9, 10, 11], [16, 17, 18, 19]], [[4, 5, 6, 7], [12, 13, 14, 15], [20]]]
    assert sorted(i for batches in dealt for batch in batches for i in batch) == list(range(21))
    assert [len(framework(21, 4, rank, 3)) for rank in range(3)] == [2, 2, 2]


def test_a_trap_of_a_named_scenario_sends_the_reader_to_a_recipe_that_holds_there(tmp_path):
    """NVIDIA-BioNeMo/bionemo-recipes #482: the writer of Predictions under DDP saves no row when a framework replaced
    the batch sampler; its declared trap sends the reader to the page whose writer holds there. A trap that sends the
    reader to a page with no such recipe fails, naming it."""
    text = space.MATRIX_FILE.read_text(encoding="utf-8")
    head = '[[recipe.ddp_predict_writer.declared]]\nscenario = "report_bionemo_recipes_482"\n'
    start = text.index(head)
    at = text.index('\nsee = "examples/distributed/ddp_predict_replaced_batch_sampler"', start)
    nowhere = tmp_path / "matrix.toml"
    rest = text[at:].split("\n", 2)[2]  # after the see line
    nowhere.write_text(text[:at] + '\nsee = "examples/distributed/ddp_predict"\n' + rest, encoding="utf-8")
    with pytest.raises(
        space.MatrixError,
        match=(
            r"\[recipe\.ddp_predict_writer\] sends scenario 'report_bionemo_recipes_482' to "
            r"examples/distributed/ddp_predict, where no recipe holds there"
        ),
    ):
        space.load_space(nowhere)
    loaded = space.load_space()
    report = next(s for s in loaded.scenarios if s.id == "report_bionemo_recipes_482")
    recipes = {r.id: r for r in loaded.recipes}
    assert recipes["ddp_predict_writer"].expected(report) == "differs"
    assert recipes["ddp_predict_replayed_indices"].expected(report) == "holds"


class _Ranks:
    """``world`` ranks run in threads, each with a module stand-in whose ``all_gather`` stacks what every rank passed
    (as ``LightningModule.all_gather`` returns under DDP: one block per rank), so that a page's gather helper runs as
    it does on every rank at once."""

    def __init__(self, world: int):
        import threading

        self.world = world
        self.barrier = threading.Barrier(world)
        self.slots: list = [None] * world

    def module(self, rank: int):
        import torch

        ranks = self

        class Module:
            def all_gather(self, tensor):
                ranks.slots[rank] = tensor
                ranks.barrier.wait()
                stacked = torch.stack(list(ranks.slots))
                ranks.barrier.wait()
                return stacked

        return Module()

    def run(self, function, per_rank: list) -> list:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.world) as pool:
            futures = [pool.submit(function, self.module(rank), per_rank[rank]) for rank in range(self.world)]
            return [future.result(timeout=30) for future in futures]


@pytest.mark.parametrize(
    ("page", "owner"),
    [
        ("gallery/distributed/ddp_per_rank_caches.py", "DatasetMeanValidationLoss"),
        ("gallery/distributed/ddp_gather_per_sample_vectors.py", "ValidationEmbeddings"),
    ],
)
def test_the_gather_helpers_restore_the_samplers_order_for_rows_of_any_shape(page, owner):
    """25 samples on 3 ranks as DistributedSampler deals them (rank r: positions r, r + 3, ... of the list padded with
    samples 0 and 1), each sample a (2, 2) block: every rank gets all 27 rows in the sampler's order, so the first 25
    are the dataset in order; shards of different lengths (an own split of 25: 9, 8, 8) too."""
    import torch

    helper = scenarios.page_definitions(ROOT / page, (owner,), object)[owner].gather_in_sampler_order
    dataset = torch.arange(25 * 4, dtype=torch.float32).reshape(25, 2, 2)
    padded = [*range(25), 0, 1]
    shards = [dataset[padded[rank::3]] for rank in range(3)]
    for gathered in _Ranks(3).run(helper, shards):
        assert gathered.shape == (27, 2, 2) and torch.equal(gathered[:25], dataset)
    own = [dataset[rank::3] for rank in range(3)]
    for gathered in _Ranks(3).run(helper, own):
        assert torch.equal(gathered, dataset)


def test_the_monitors_best_score_of_a_bfloat16_loss_is_compared_within_its_tolerance():
    """A hand-written loss under bf16-mixed is logged in bfloat16 (the module-side cache-reader's 0.7109375, where the
    float32 truth was 0.70881, in a cell of an earlier covering set, when that recipe cached the scenario's step's
    loss): the monitoring callbacks' best score, that same logged value, is compared with the best epoch value within
    the tolerance of the value itself, two bfloat16 roundings, not float32's. The callback-side recipe logs the loss
    the scenario's step computes."""
    loaded = scenarios.load_space()
    recipe = next(r for r in loaded.recipes if r.id == "callback_side")
    values = {"train_step": "hand-loss", "precision": "bf16-mixed", "callbacks": "monitoring", "length": "epochs-3"}
    result = scenarios.cell_result(
        recipe, loaded.scenario("bf16-monitored", values), declared_warnings=space.declared_warnings()
    )
    assert result["outcome"] == "holds", result
    assert harness.REL_TOL < result["relative_error"] <= harness.BF16_HAND_LOSS_REL_TOL


def test_a_checkpoint_compares_only_validations_after_an_optimizer_step():
    """Lightning's ModelCheckpoint saves, and so compares, only after an optimizer step since its last save (its
    count starts at 0): with validation every 2 batches under accumulation 3, some validations are never its best."""
    watched = [(1.9, 0), (1.5, 1), (0.9, 1), (1.2, 2), (1.1, 2)]  # (value, optimizer steps before it)
    assert harness.checkpoint_candidates(watched) == [1.5, 1.2]
    assert harness.checkpoint_candidates([(2.0, None), (1.0, None)]) == [2.0, 1.0]  # training epochs: every one


@pytest.mark.parametrize(
    ("recipe_id", "scenario_id"),
    [("module_side", "bf16_hand_loss_monitored"), ("validation", "checkpoint_skips_a_validation_without_a_step")],
)
def test_the_monitors_are_compared_with_what_they_could_see(recipe_id, scenario_id):
    """Exploration (seed 29): a monitored bfloat16 loss within the recipe's own tolerance, and a ModelCheckpoint that
    skipped a validation without an optimizer step, were called failures of the recipe."""
    loaded = scenarios.load_space()
    recipe = next(r for r in loaded.recipes if r.id == recipe_id)
    scenario = next(s for s in loaded.scenarios if s.id == scenario_id)
    result = scenarios.cell_result(recipe, scenario, declared_warnings=space.declared_warnings())
    assert (result["outcome"], result["expected"]) == ("holds", "holds"), result


def test_a_myst_pages_python_is_its_code_cells_without_their_options(tmp_path):
    """A MyST notebook's code cells, line for line, with a cell's options (``:tags: [remove-cell]``) blanked: they
    are MyST's, not Python."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n```{code-cell} ipython3\n:tags: [remove-cell]\n\nimport logging\n```\n\nText.\n\n"
        "```{code-cell} ipython3\nx = 1\n```\n",
        encoding="utf-8",
    )
    source = harness.page_source(page)
    assert source.splitlines() == ["", "", "", "", "", "import logging", "", "", "", "", "", "x = 1", ""]
    compile(source, str(page), "exec")


def test_the_box_names_the_page_that_holds_two_settings_at_once_and_each_gap():
    """A recipe outside DDP and outside several losses: the several-losses page, which holds with both, says "also with
    DDP"; values no page holds together are said with their reason; a trap there is read about, not used."""
    from guide.scenario_matrix import Results, not_with_lines, summary_of

    axes = [
        {"id": "strategy", "title": "Processes", "stages": ["train"], "default": "single",
         "values": [{"id": v, "label": v, "source": "s"} for v in ("single", "ddp-2", "ddp-3")]},
        {"id": "train_step", "title": "What training_step returns", "stages": ["train"], "default": "loss-dict",
         "values": [{"id": v, "label": v, "source": "s"} for v in ("loss-dict", "tensor", "manual-gan-losses")]},
    ]  # fmt: skip
    ddp = ["ddp-2", "ddp-3"]
    recipe = {
        "id": "r", "title": "R", "page": "gallery/core/r.py", "stage": "train", "transform": None,
        "outside": [
            {"axis": "strategy", "values": ddp, "reason": "one process", "see": "examples/ddp"},
            {"axis": "train_step", "values": ["manual-gan-losses"], "reason": "no loss", "see": "examples/gan"},
        ],
        "declared": [{"values": {"strategy": ["ddp-2"], "train_step": ["tensor"]}, "scenario": None,
                      "outcome": "raises", "reason": "a trap", "see": "examples/why"}],
        "together": [{"values": {"strategy": v, "train_step": "manual-gan-losses"}, "see": "examples/gan"}
                     for v in ddp],
        "gaps": [{"values": {"strategy": ddp, "train_step": ["tensor"]}, "reason": "none checked yet"}],
    }  # fmt: skip
    cells = [{"recipe": "r", "scenario": "s1", "outcome": "raises", "declared": {"reason": "a trap"}},
             {"recipe": "r", "scenario": "s0", "outcome": "holds"}]  # fmt: skip
    scenarios_of = [{"id": "s1", "values": {"strategy": "ddp-2", "train_step": "tensor"}},
                    {"id": "s0", "values": {"strategy": "single", "train_step": "loss-dict"}}]  # fmt: skip
    document = {"recipes": [recipe], "axes": axes, "cells": cells, "stage_calls": {"train": ["fit"]},
                "scenarios": scenarios_of, "lightning": "2.6.6"}  # fmt: skip
    results = Results(document, checked={"r": ["2.2.5", "2.0.9"]})
    text = "\n".join(summary_of(results, "r"))
    assert "manual-gan-losses (use :doc:`/examples/gan`, also with DDP)" in text
    assert "DDP (use :doc:`/examples/ddp`)" in text  # that page does not hold with several losses: no "also"
    # the words of exactly those values: "a tensor or None" would say more than the gap
    assert "**No recipe here yet** for DDP and tensor together: none checked yet." in text
    assert "(see :doc:`/examples/why`)" in text  # the trap's values meet the gap: its page is read, not used
    assert "**Checked on** Lightning 2.0.9, 2.2.5 and 2.6.6." in text  # the records', and this build's
    assert "**Checked on** Lightning 2.6.6." in "\n".join(summary_of(Results(document), "r"))
    detail = "\n".join(not_with_lines(results, "r"))
    assert "- manual-gan-losses -- no loss, also with DDP. Use :doc:`/examples/gan`." in detail
    assert "an error: a trap. See :doc:`/examples/why`." in detail


def test_a_notebook_cells_options_are_not_python(tmp_path):
    """A MyST notebook's cell that opens with ``:tags: [remove-cell]`` (which-replacement.md's quiet-log cell): the
    recipe's source blanks the option, keeps every line number, and still defines the page's classes."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n```{code-cell} ipython3\n:tags: [remove-cell]\n\nimport math\n```\n\ntext\n\n"
        "```{code-cell} ipython3\nclass Kept:\n    value = math.pi\n```\n",
        encoding="utf-8",
    )
    source = harness.page_source(page)
    assert source.splitlines()[3] == "" and source.splitlines()[5] == "import math"
    assert len(source.splitlines()) == len(page.read_text(encoding="utf-8").splitlines())
    namespace = harness.page_definitions(page, ("Kept",), object)
    assert namespace["Kept"].value == pytest.approx(3.14159, rel=1e-5)


def test_the_batch_hooks_row_holds_in_a_fit_differs_in_its_declared_outside_value_and_catches_a_broken_rename(
    monkeypatch,
):
    """LM006's rename of a callback's ``on_batch_start`` / ``on_batch_end``: the renamed hooks run where 1.4.9 called
    the old ones in a fit (a start and an end per training batch). A crash another callback raises in its own
    batch-end hook, after this one's, comes one call after the old code's last: that value is declared outside the
    row. A rename that leaves ``on_batch_start`` alone differs."""
    from lightning_migrate import checker

    loaded = space.load_space()
    recipe = next(r for r in loaded.recipes if r.id == "rewrite_callback_on_batch_start_end")
    assert [set(o.values) for o in recipe.outside if o.axis == "calls"] == [{"crash-rerun"}]
    with harness.quiet():
        held = harness.run_cell(recipe, loaded.scenario("t", {}))
        crashed = harness.run_cell(
            dataclasses.replace(recipe, outside=()), loaded.scenario("t", {"calls": "crash-rerun"})
        )  # run where the row declares it does not hold: what its reason says
    assert held["outcome"] == "holds", held
    assert crashed["outcome"] == "differs", crashed
    assert "first difference at call 3: ['end', 'train'] vs ['start', 'train']" in crashed["detail"], crashed
    rewrite = checker.rewrite_source

    def leaves_the_start_hook(text, filename):
        rewritten = rewrite(text, filename)
        assert "def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):" in rewritten
        return rewritten.replace("def on_train_batch_start(", "def on_batch_start(")

    monkeypatch.setattr(checker, "rewrite_source", leaves_the_start_hook)
    with harness.quiet():
        result = harness.run_cell(recipe, loaded.scenario("t", {}))
    assert result["outcome"] == "differs" and "vs ['start', 'train']" in result["detail"], result


@pytest.mark.parametrize(
    "values",
    [{"calls": "test-fit-test"}, {"calls": "crash-rerun"}, {"strategy": "ddp-2", "calls": "test-fit-test"}],
    ids=["test, fit, test", "a crash and a rerun of the same objects", "DDP, 2 processes, test, fit, test"],
)
def test_a_calls_row_holds_and_catches_a_rewrite_that_misses_a_stage(values, monkeypatch):
    """A row weighted by ``calls`` (LM006's rewrite of a module's ``on_epoch_start`` / ``on_epoch_end``) holds where
    the rewritten hooks run where 1.4.9 called the old ones -- what the rank-0 process kept, under DDP too -- and
    differs for a rewrite that leaves the test stage out."""
    from lightning_migrate import checker

    loaded = space.load_space()
    recipe = next(r for r in loaded.recipes if r.id == "rewrite_module_on_epoch_start_end")
    scenario = loaded.scenario("t", values)
    with harness.quiet():
        assert harness.run_cell(recipe, scenario)["outcome"] == "holds"
    rewrite = checker.rewrite_source
    missing = "\n    def on_test_epoch_end(self):\n        self._on_epoch_end()\n"

    def forgets_the_test_stage(text, filename):
        rewritten = rewrite(text, filename)
        assert missing in rewritten
        return rewritten.replace(missing, "")

    monkeypatch.setattr(checker, "rewrite_source", forgets_the_test_stage)
    assert "test" in scenario.runs, scenario.runs  # a stage for the broken rewrite to miss
    with harness.quiet():
        result = harness.run_cell(recipe, scenario)
    assert result["outcome"] == "differs" and "['end', 'test']" in result["detail"], result


def test_a_cell_whose_port_was_taken_runs_again(monkeypatch, capsys):
    """A DDP rendezvous that found its port taken (``EADDRINUSE``, a race with another process) runs the cell
    again, up to ``RENDEZVOUS_ATTEMPTS`` times in all; a cell that keeps losing it is ``raises`` with that text; any
    other error is the cell's outcome at once."""
    loaded = scenarios.load_space()
    recipe = next(r for r in loaded.recipes if r.id == "ddp_dataset_mean")
    scenario = next(s for s in loaded.scenarios if s.id == "ddp_odd_dataset")
    race = RuntimeError("The server socket has failed to listen on any local network address. code: -98, EADDRINUSE")
    calls: list[int] = []

    def run(outcomes):
        def fake(*_):
            calls.append(1)
            outcome = outcomes[len(calls) - 1]
            if isinstance(outcome, Exception):
                raise outcome
            return {"outcome": outcome}

        calls.clear()
        monkeypatch.setattr(harness, "_run", fake)
        return harness.run_cell(recipe, scenario)

    assert run([race, race, "holds"])["outcome"] == "holds" and len(calls) == 3
    assert capsys.readouterr().out.count("EADDRINUSE") == 2
    lost = run([race] * harness.RENDEZVOUS_ATTEMPTS)
    assert lost["outcome"] == "raises" and "EADDRINUSE" in lost["detail"] and len(calls) == harness.RENDEZVOUS_ATTEMPTS
    other = run([ValueError("the recipe's own error"), "holds"])
    assert other["outcome"] == "raises" and len(calls) == 1
