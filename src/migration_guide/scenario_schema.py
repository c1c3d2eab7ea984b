"""The schema of ``data/scenarios.toml``, declared once: its tables, their keys, the settings an axis value (or a
named scenario) may set, and every closed set of values (*kinds*) with what each means.

The loader (:func:`migration_guide.scenarios.space.load_space`) checks the file against :data:`FILE` (an unknown
key names the closest known one) and starts every scenario from :data:`BASE_SETTINGS`; the harness
(:mod:`migration_guide.scenarios.harness`), the ground truth and the loader implement each kind in one table
(:data:`migration_guide.scenarios.IMPLEMENTATIONS`), and ``tests/test_scenario_schema.py`` fails when a kind is
declared here and not implemented there, or the reverse, and when a declared setting is never read by a cell.
``docs/contributing.md`` renders this schema (``python -m migration_guide.scenario_schema`` prints it).

No Lightning is imported here.
"""

from __future__ import annotations

from typing import Any

from .data_schema import Key, defaults, kinds, markdown

#: The stages a recipe can reduce (the calls that run each: :data:`migration_guide.scenarios.space.STAGE_RUNS`).
STAGES = {
    "train": "training: one value per training epoch (``trainer.fit``)",
    "validation": "validation: one value per validation run (``trainer.fit`` and ``trainer.validate``)",
    "test": "test: one value per ``trainer.test`` run",
    "predict": "predictions: what ``trainer.predict`` returned, batch by batch",
}
CALLS = {
    "fit": "``trainer.fit``",
    "validate": "``trainer.validate``",
    "test": "``trainer.test``",
    "predict": "``trainer.predict``",
}
TRAIN_STEPS = {
    "loss-dict": 'returns ``{"loss": loss}`` (BoringModel\'s own step)',
    "tensor": "returns the bare loss tensor",
    "none-batch-1": "returns ``None`` for batch 1 (a skipped batch)",
    "manual": 'manual optimization; returns ``{"loss": loss}``',
    "manual-nothing": "manual optimization; returns nothing",
    "manual-no-loss": 'manual optimization; returns a dict without ``"loss"`` (``{"x": loss}``)',
    "manual-two-optimizers": "manual optimization with two optimizers, stepped one after the other; returns the loss",
    "manual-gan-losses": 'manual optimization with two optimizers; returns ``{"g_loss", "d_loss"}`` (Lightning #17801)',
    "hand-loss": (
        "the loss written by hand, ``((p - y) ** 2).mean()``: bfloat16 under bf16-mixed, so a training value there "
        "is compared within ``2**-7`` (two bfloat16 roundings)"
    ),
}
EVAL_STEPS = {
    "dict": 'validation_step and test_step return BoringModel\'s dicts (``{"x": loss}``, ``{"y": loss}``)',
    "tensor": "they return the bare loss",
    "none": "they return ``None`` (the step only logs)",
}
CALLBACKS = {
    "monitoring": "ModelCheckpoint, EarlyStopping and a ModelCheckpoint subclass monitor the recipe's value",
    "plateau": "a ReduceLROnPlateau scheduler monitors the recipe's value",
    "prediction-writer": "a BasePredictionWriter writes every batch",
    "accumulation-scheduler": "a GradientAccumulationScheduler (accumulate 2 batches from epoch 1)",
}
DATA_KINDS = {
    "map": "a map-style dataset",
    "iterable": "an IterableDataset without ``__len__``, sharding itself by rank",
}
DATA_SOURCES = {
    "loaders": "the loaders are passed to the Trainer call",
    "datamodule": "a LightningDataModule's hooks return them",
}
SPLITS = {
    "sampler": "Lightning's DistributedSampler (which pads)",
    "own": (
        "the user's own per-rank split (with ``use_distributed_sampler=False``): no padding, shards of unequal length"
    ),
}
COURSES = {
    "falling": "the validation loss falls run after run",
    "not-monotone": (
        "training samples shifted, the validation samples after the first two batches shifted the other way, those "
        "two being zeros: the validation loss falls, rises and falls, and the sanity check's batches are easier"
    ),
}
BATCH_SAMPLERS = {
    "lightning": "the loaders as Lightning prepares them",
    "framework": (
        "the predict loader's batch sampler replaced by a framework's strategy after Lightning prepared it "
        "(NVIDIA-BioNeMo/bionemo-recipes #482)"
    ),
}
TRAIN_LOADERS = {1: "one training loader", 2: "two, combined"}
EVAL_LOADERS = {
    1: "one loader per stage",
    2: "two",
    "varies": (
        "validation: 1 loader in even epochs, 2 in odd ones; test and predict: 1 on the first call, 2 on the next"
    ),
}
RESUMES = {
    False: "no resume",
    True: (
        "the first fit saves a checkpoint mid-epoch and crashes one step later; a new module, new callbacks and a new "
        "Trainer resume from it (``ckpt_path``) as a new process would; only the resumed run is compared, except a "
        "value carried across runs (``over_runs``), compared with the truth over the validations the checkpoint came "
        "after and the resumed run's"
    ),
    "last": (
        "a restart: the first fit has a ``ModelCheckpoint(save_last=True)`` and crashes halfway through its second "
        'epoch; new objects resume with ``ckpt_path="last"`` (the checkpoint of the first epoch\'s end)'
    ),
}
STRATEGIES = {
    "ddp_fork": (
        'Lightning\'s ``DDPStrategy(start_method="fork")``, with ``accelerator="cpu"``, ``trainer.devices`` processes'
    )
}
WEIGHTINGS = {
    "batch": "the mean of per-batch means (what the old outputs list gave training_epoch_end / validation_epoch_end)",
    "batch_max": "the largest per-batch mean",
    "sample": "every sample once (self.log's on_epoch mean, a dataset-level mean)",
    "predictions": "every prediction, in order; one tensor per dataloader",
    "calls": (
        "where a stage-less hook such as on_epoch_end ran: [edge, stage] per call, against where the newest 1.x "
        "release that ran it called it, as its record says; the recipe's objects keep the calls in "
        'metric = "attribute:<name>"'
    ),
}
OVER_RUNS = {"running_min": "the value is the best so far, run after run (a best_val_loss), not each run's own"}
TRANSFORMS = {
    "lightning-migrate": (
        "the page is a file under data/rewrites/ whose code is what ``lightning_migrate.checker.rewrite_source(text, "
        "filename)`` makes of it"
    )
}
OUTCOMES = {
    "differs": "the recipe logs the values expected, with different values (by more than the tolerance)",
    "raises": "the recipe raises an error whose text contains ``match``",
}

# -- Settings: what an axis value (or a named scenario) sets -------------------------------------------------------
DATA = {
    "train": Key("samples of the training set's first loader", (int,), default=40),
    "val": Key("samples of the validation set's first loader", (int,), default=24),
    "test": Key("samples of the test set's first loader", (int,), default=24),
    "predict": Key("samples of the prediction set's first loader", (int,), default=24),
    "second": Key("samples of a stage's second loader", (int,), default=16),
    "batch_size": Key("the batch size of every loader", (int,), default=8),
    "shuffle": Key("whether the training loader shuffles", (bool,), default=False),
    "kind": Key("the kind of dataset", (str,), default="map", choices=DATA_KINDS),
    "source": Key("where the loaders come from", (str,), default="loaders", choices=DATA_SOURCES),
    "train_loaders": Key("how many training loaders", (int,), default=1, choices=TRAIN_LOADERS),
    "eval_loaders": Key(
        "how many loaders validation, test and predict get", (int, str), default=1, choices=EVAL_LOADERS
    ),
    "split": Key("how the samples are split between the ranks", (str,), default="sampler", choices=SPLITS),
    "course": Key("how the validation loss goes, run after run", (str,), default="falling", choices=COURSES),
    "batch_sampler": Key(
        "who makes the predict loader's batch sampler", (str,), default="lightning", choices=BATCH_SAMPLERS
    ),
}
STEP = {
    "train": Key("what training_step returns", (str,), default="loss-dict", choices=TRAIN_STEPS),
    "eval": Key("what validation_step and test_step return", (str,), default="dict", choices=EVAL_STEPS),
}
SETTINGS = {
    "runs": Key(
        'the Trainer calls, in order; "+fit" (and so on) calls it on a new Trainer with the same module and callback '
        "objects",
        (list,),
        default=["fit"],
        items=Key("one call", (str,), choices=CALLS, prefix="+"),
    ),
    "crash": Key(
        "true: the calls run once with a crash injected at the second batch of the recipe's stage (or its epoch "
        "end), then all again on a new Trainer with the same module and callback objects; only the second attempt is "
        "compared",
        (bool,),
        default=False,
    ),
    "resume": Key("a run resumed from a checkpoint", (bool, str), default=False, choices=RESUMES),
    "trainer": Key("keyword arguments to ``lightning.pytorch.Trainer``", (dict,), default={}),
    "strategy": Key("the strategy, with ``trainer.devices`` processes (none: one process)", (str,), choices=STRATEGIES),
    "data": Key("the datasets and loaders", (dict,), keys=DATA),
    "step": Key("what the scenario's module's steps return", (dict,), keys=STEP),
    "callbacks": Key(
        "callbacks beside the recipe (appended to the other values')",
        (list,),
        default=[],
        items=Key("", (str,), choices=CALLBACKS),
    ),
    "predict_kwargs": Key("keyword arguments to ``trainer.predict``", (dict,), default={}),
}
#: The settings a scenario starts from, before its axis values' (every setting's default).
BASE_SETTINGS: dict[str, Any] = defaults(SETTINGS)

# -- Tables --------------------------------------------------------------------------------------------------------
VALUE = {
    "label": Key("what the reader sees", (str,), required=True),
    "source": Key(
        'the public report or the Lightning documentation that makes the value real (a URL, or "Lightning #NNNN" '
        'for an issue or pull request of Lightning-AI/pytorch-lightning, or "owner/repo #NNNN")',
        (str,),
        required=True,
    ),
    **SETTINGS,
}
AXIS = {
    "title": Key("what the reader sees", (str,), required=True),
    "stages": Key(
        "the recipe stages whose value the axis can change (a recipe's domain box lists those axes only)",
        (list,),
        required=True,
        items=Key("a stage", (str,), choices=STAGES),
    ),
    "default": Key("the value a named scenario takes when it does not name one", (str,), required=True),
    "values": Key(
        "``<value id> = { label, source, <settings> }``: the settings are merged into the scenario (tables key by "
        "key, callbacks appended, anything else replaced)",
        (dict,),
        required=True,
        named=Key("one value", (dict,), keys=VALUE),
    ),
}
CONSTRAINT = {
    "values": Key(
        "``{ <axis> = <value> | [<values>], ... }``, two axes or more: a scenario whose values match every entry is "
        "never generated",
        (dict,),
        required=True,
        named=Key("the values of one axis", (str, list)),
    ),
    "reason": Key(
        "why the values cannot combine (Lightning refuses them, or one turns the other off)", (str,), required=True
    ),
}
SCENARIO = {
    "title": Key("what the reader sees", (str,)),
    "source": Key("the public report, for a regression scenario", (str,)),
    "values": Key(
        "``{ <axis> = <value> }``; every other axis at its default", (dict,), named=Key("a value id", (str,))
    ),
    **SETTINGS,
}
OUTSIDE = {
    "axis": Key("the axis", (str,), required=True),
    "values": Key("its values outside the recipe's domain (never its default)", (str, list), required=True),
    "reason": Key("why the recipe does not hold there", (str,), required=True),
    "see": Key(
        "the page (docname) of a recipe that holds there: the build checks that one does", (str,), required=True
    ),
}
DECLARED = {
    "values": Key(
        "``{ <axis> = <value> | [<values>] }``: the cells it applies to", (dict,), named=Key("", (str, list))
    ),
    "scenario": Key("or the named scenario it applies to", (str,)),
    "outcome": Key("what the cell does", (str,), required=True, choices=OUTCOMES),
    "reason": Key("why, for the reader", (str,), required=True),
    "see": Key("the page to read", (str,), required=True),
    "match": Key("text the error (or the difference) must contain; required for raises", (str,)),
    "releases": Key(
        "the Lightning releases it holds on, where Lightning changed between releases (default: every release)",
        (list,),
        items=Key("a release of data/compat/matrix.toml", (str,)),
    ),
}
GAP = {
    "values": Key(
        "``{ <axis> = <value> | [<values>], ... }``, two axes or more: a reader with these values together is sent by "
        "a recipe to pages none of which holds there",
        (dict,),
        required=True,
        named=Key("the values of one axis", (str, list)),
    ),
    "reason": Key(
        "why no recipe of the site holds there, in the reader's words: each recipe that sends such a reader away "
        "says so on its page",
        (str,),
        required=True,
    ),
}
RECIPE = {
    "title": Key("what the reader sees", (str,), required=True),
    "page": Key(
        "the page that shows it (the matrix runs that page's code, not a copy): a gallery script or a MyST notebook "
        "under docs/ (or, with a transform, a file it transforms)",
        (str,),
        required=True,
    ),
    "define": Key(
        "the page's top-level names the recipe needs, taken from the page in this order", (list,), required=True
    ),
    "module": Key(
        'the LightningModule class to train ("BoringModel": the scenario\'s base, untouched)', (str,), required=True
    ),
    "callbacks": Key("the page's callback classes, instantiated without arguments", (list,), default=[]),
    "stage": Key("what the recipe reduces", (str,), required=True, choices=STAGES),
    "weighting": Key("how its value weights batches", (str,), required=True, choices=WEIGHTINGS),
    "metric": Key(
        'the name it logs ("{idx}": one per dataloader, the dataloader index), or a list of names, or for predictions '
        '``"attribute:<name>"`` on the module (or else on the first callback that has it)',
        (str, list),
        required=True,
    ),
    "over_runs": Key("a value carried across runs", (str,), choices=OVER_RUNS),
    "transform": Key("the code that runs is what this makes of the page", (str,), choices=TRANSFORMS),
    "targets": Key(
        "``{ <metric> = <target> }``: a training recipe's own step computes one loss per metric, the mean squared "
        "error of BoringModel's predictions against the target",
        (dict,),
        named=Key("the target", (float,)),
    ),
    "outside": Key(
        "``[[recipe.<id>.outside]]``: axis values outside the recipe's domain; a cell there is not applicable, with "
        "the reason and the page of the variant to use",
        (list,),
        items=Key("", (dict,), keys=OUTSIDE),
    ),
    "declared": Key(
        "``[[recipe.<id>.declared]]``: a cell inside the domain that does not hold, on purpose (a trap kept as "
        "evidence); give either values or scenario",
        (list,),
        items=Key("", (dict,), keys=DECLARED),
    ),
}
FILE = {
    "axis": Key(
        "``[axis.<id>]``: one dimension of the space; a scenario takes one value of every axis",
        (dict,),
        named=Key("", (dict,), keys=AXIS),
    ),
    "constraint": Key(
        "``[[constraint]]``: values that cannot combine", (list,), items=Key("", (dict,), keys=CONSTRAINT)
    ),
    "scenario": Key(
        "``[scenario.<id>]``: a named scenario (hand-picked, or one per public report); its settings override its "
        "values'",
        (dict,),
        named=Key("", (dict,), keys=SCENARIO),
    ),
    "recipe": Key(
        "``[recipe.<id>]``: one recommended replacement, a row of the matrix",
        (dict,),
        named=Key("", (dict,), keys=RECIPE),
    ),
    "gap": Key(
        "``[[gap]]``: values that together have no recipe on the site: where a referral would fail, declared with "
        "the reason instead (the loader refuses one that no failing referral needs)",
        (list,),
        items=Key("", (dict,), keys=GAP),
    ),
}


def declared_kinds() -> dict[str, Key]:
    """Every kind the file may hold, by its dotted path: the settings' (``runs``, ``data.kind``, ``step.train``, ...)
    and the tables' (``axis.stages``, ``recipe.stage``, ``recipe.declared.outcome``, ...)."""
    found = dict(kinds(SETTINGS))
    found.update(kinds({k: v for k, v in AXIS.items() if k != "values"}, "axis"))
    found.update(kinds(RECIPE, "recipe"))
    return found


def document() -> str:
    """The schema as Markdown: each table, its keys and the settings, with every kind's meaning."""
    parts = []
    for title, keys, nested in (
        ("The file's tables", FILE, False),
        ("`[axis.<id>]`", AXIS, False),
        (
            "An axis value, `[axis.<id>.values] <value id> = { ... }`: these, and settings",
            _pick(VALUE, "label", "source"),
            True,
        ),
        ("Settings (an axis value's or a named scenario's)", SETTINGS, True),
        ("`[[constraint]]`", CONSTRAINT, True),
        ("`[scenario.<id>]`: these, and settings", _pick(SCENARIO, "title", "source", "values"), True),
        ("`[recipe.<id>]`", RECIPE, False),
        ("`[[recipe.<id>.outside]]`", OUTSIDE, True),
        ("`[[recipe.<id>.declared]]`", DECLARED, True),
        ("`[[gap]]`", GAP, True),
    ):
        parts.append(f"**{title}**\n\n{markdown(keys, nested=nested)}\n")
    return "\n".join(parts)


def _pick(keys: dict[str, Key], *names: str) -> dict[str, Key]:
    return {name: keys[name] for name in names}


if __name__ == "__main__":  # python -m migration_guide.scenario_schema
    print(document())
