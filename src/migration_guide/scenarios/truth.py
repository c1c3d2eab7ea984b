"""Ground truth: plain PyTorch over the data and the recorded weights, without Lightning and without the recipe.

What each quantity means, and so what the recipe is compared with:

* **training** (``stage = "train"``): one value per training epoch, over the batches that epoch ran *in the
  compared run*, at the weights each batch was computed with -- what the old ``outputs`` list held in one process.
  Under DDP that is every rank's batches (each rank's list held its own; a user asking for the epoch's mean asks
  for all of them), each batch as it ran, a sample the distributed sampler repeated to even out the ranks
  included (Lightning #20683). After a crash and a re-run, only the re-run's batches. In a
  run **resumed from a mid-epoch checkpoint**, the resumed epoch's value is over the batches that ran after the
  resume, in the resumed process: the old ``outputs`` list was never checkpointed, so it held just those
  (Lightning 2.6 restarts a map-style loader at its first batch: they are the epoch's first batches again, under
  the batch indices that follow the checkpoint's). Batches whose step returned no loss had no entry.
* **evaluation** (validation, test): one value per run and dataloader, over the samples that run evaluated --
  every sample of the dataset once (a sampler's padding is not counted twice), the first ``limit`` batches of each
  rank when a batch limit applies -- weighted as the recipe's quantity is defined (``batch``: the mean of
  per-batch means over the samples batched as a plain ``DataLoader`` would; ``batch_max``: the largest of those;
  ``sample``: every sample once).
* **predictions**: every prediction of the evaluated samples, in dataset order: one tensor, or one per
  dataloader when there are several.
* **calls** (a stage-less hook's calls, ``on_epoch_end``, ``on_batch_end``): ``[edge, stage]`` for each call the
  newest 1.x release that ran the hook would have made in the run -- at each epoch (or training batch) start or end
  of a stage whose hook that release called it beside, as its record says (``stageless-hook-calls`` of
  ``data/compat/<release>.json``, read by :func:`migration_guide.record_proven.stageless`), over the stage
  epochs (the sanity check's included) and training batches the run made, in order.

Under ``precision="bf16-mixed"`` the model is applied under ``torch.autocast("cpu", torch.bfloat16)``, as
Lightning applies it.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

from .space import MatrixError, Recipe, Scenario


def _autocast(scenario: Scenario):
    import torch

    if str(scenario.trainer.get("precision", "32-true")) == "bf16-mixed":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def loss_per_sample(weights: dict, batch, scenario: Scenario, target: float = 1.0):
    """BoringModel's loss (mean squared error against ones, or against ``target``), one value per sample, and the
    predictions: shapes ``(batch,)`` and ``(batch, 2)``. A list of batches (several training loaders) is
    concatenated."""
    import torch
    from lightning.pytorch.demos.boring_classes import BoringModel

    reference = BoringModel()
    reference.load_state_dict(weights)
    reference.eval()
    if isinstance(batch, (list, tuple)):
        batch = torch.cat(batch)
    with torch.no_grad(), _autocast(scenario):
        predictions = reference(batch)
        losses = ((predictions.float() - torch.full_like(predictions.float(), target)) ** 2).mean(dim=1)
    return losses, predictions


def _mean_of_batch_means(per_batch: list) -> float:
    import torch

    return torch.stack([losses.mean() for losses in per_batch]).mean().item()


def _largest_batch_mean(per_batch: list) -> float:
    import torch

    return torch.stack([losses.mean() for losses in per_batch]).max().item()


def _sample_mean(per_batch: list) -> float:
    import torch

    return torch.cat(per_batch).mean().item()


def _every_prediction(per_batch: list):
    import torch

    return torch.cat(per_batch)


#: The implementation of each ``weighting``: a run's value from its batches' per-sample losses (``predictions``:
#: from its batches' predictions).
WEIGHTINGS = {
    "batch": _mean_of_batch_means,
    "batch_max": _largest_batch_mean,
    "sample": _sample_mean,
    "predictions": _every_prediction,
}


def _running_min(runs: list[list[float]]) -> list[list[float]]:
    return [[min(r[0] for r in runs[: n + 1])] for n in range(len(runs))]


#: The implementation of each ``over_runs``: the values carried across runs, from each run's own.
OVER_RUNS = {"running_min": _running_min}


def reduce(per_batch: list, weighting: str):
    """Mean of per-batch means (``batch``), the largest per-batch mean (``batch_max``: the epoch's worst batch),
    the mean of every sample (``sample``) of a list of per-sample loss tensors, or every prediction of a list of
    prediction tensors (``predictions``) (:data:`WEIGHTINGS`).

    Raises:
        MatrixError: an unknown weighting.
    """
    if weighting not in WEIGHTINGS:
        raise MatrixError(f"weighting = {weighting!r}: the ground truth implements {sorted(WEIGHTINGS)} only")
    return WEIGHTINGS[weighting](per_batch)


def evaluated_indices(size: int, scenario: Scenario, stage: str, ran: int | None = None) -> list[int]:
    """The samples of a dataset of ``size`` that one evaluation run reads, each once, in dataset order.

    Each rank reads its share: Lightning's ``DistributedSampler`` pads the index list to a multiple of the world
    size with its first indices and deals them out (rank ``r``: positions ``r, r + world, ...``); an own split or
    an iterable dataset deals ``r, r + world, ...`` without padding. Each rank then runs its first ``limit``
    batches (``limit_<stage>_batches``: an int, or a fraction of the rank's batches, rounded down;
    ``fast_dev_run``: one), and at most ``ran`` batches when given: how many rank 0 evaluated in that run (fewer when
    Lightning finishes an evaluation a resumed checkpoint interrupted).
    """
    world = scenario.world_size
    batch_size = scenario.data["batch_size"]
    indices = list(range(size))
    padded = scenario.distributed and scenario.data["split"] == "sampler" and scenario.data["kind"] == "map"
    if padded:
        indices += indices[: (-size) % world]
    key = {"validation": "limit_val_batches", "test": "limit_test_batches", "predict": "limit_predict_batches"}[stage]
    limit = 1 if scenario.trainer.get("fast_dev_run") else scenario.trainer.get(key)
    seen: set[int] = set()
    for rank in range(world):
        shard = indices[rank::world]
        batches = math.ceil(len(shard) / batch_size)
        if isinstance(limit, float):
            if scenario.data["kind"] == "iterable":
                raise MatrixError(f"[scenario.{scenario.id}]: a fractional limit needs a dataset with __len__")
            batches = int(batches * limit)
        elif isinstance(limit, int) and not isinstance(limit, bool):
            batches = min(batches, limit)
        if ran is not None:
            batches = min(batches, ran)
        seen.update(shard[: batches * batch_size])
    return sorted(seen)


def ground_truth(
    recipe: Recipe, scenario: Scenario, record: dict, datasets: dict, skipped: dict, before: list | None = None
) -> tuple:
    """The values the recipe must give, in order: one ``{metric: value}`` per training epoch or evaluation run,
    or for predictions one tensor (or list of tensors, one per dataloader) per predict run (see the module
    docstring for what each means); and beside each, ``(trainer number, Trainer function)`` of its run.

    ``before``: the evaluation runs of an interrupted run that the checkpoint a resumed run started from came
    after (its ``record`` entries). A value carried across runs (``over_runs = "running_min"``) is the best over
    those and the resumed run's so far: none of them is compared (the interrupted run's values were logged by it),
    but each counts in the best."""

    if recipe.stage == "train":
        if recipe.targets:  # the recipe's own step computes one loss per metric: every batch has them all
            return _own_losses(recipe, scenario, record)
        skip = skipped.get(scenario.settings["step"]["train"], lambda batch_idx: False)
        epochs: dict[tuple[int, int], list] = {}
        for entry in record["train"]:
            if not skip(entry["batch_idx"]):
                losses = loss_per_sample(entry["weights"], entry["batch"], scenario)[0]
                epochs.setdefault((entry["trainer"], entry["epoch"]), []).append(losses)
        values = [reduce(losses, recipe.weighting) for _, losses in sorted(epochs.items())]
        tags = [(trainer, "fit") for trainer, _ in sorted(epochs)]
        return _named(recipe, [[value] for value in values]), tags
    tags = [(entry["trainer"], entry["fn"]) for entry in record[recipe.stage]]
    runs = []
    batch_size = scenario.data["batch_size"]
    carried = list(before or [])
    for entry in [*carried, *record[recipe.stage]]:
        per_loader = []
        for number, name in enumerate(entry["datasets"]):
            dataset = datasets[name]
            indices = evaluated_indices(len(dataset), scenario, recipe.stage, entry.get("batches", {}).get(number))
            samples = dataset.data[indices]
            batches = [samples[start : start + batch_size] for start in range(0, len(samples), batch_size)]
            results = [loss_per_sample(entry["weights"], batch, scenario) for batch in batches]
            which = 1 if recipe.weighting == "predictions" else 0  # the predictions, or the per-sample losses
            per_loader.append(reduce([result[which] for result in results], recipe.weighting))
        runs.append(per_loader)
    if recipe.weighting == "predictions":
        return [run[0] if len(run) == 1 else run for run in runs[len(carried) :]], tags
    if recipe.over_runs is not None:  # e.g. the best value so far, run after run (a "best_val_loss")
        if recipe.over_runs not in OVER_RUNS:
            raise MatrixError(f"over_runs = {recipe.over_runs!r}: the ground truth implements {sorted(OVER_RUNS)} only")
        runs = OVER_RUNS[recipe.over_runs](runs)
    return _named(recipe, runs[len(carried) :]), tags


def stageless_calls(recipe: Recipe, page, events: list[dict]) -> list[list[str]]:
    """The calls of the stage-less hooks that the recipe's classes define on ``page`` (as written), at the stage
    epochs and training batches ``events`` (``{"hook", "stage"}`` in order): ``[edge, stage]`` each (see the module
    docstring).

    Raises:
        MatrixError: no 1.x release recorded the hooks' calls, or the page's classes define none of them.
    """
    import ast

    from migration_guide import record_proven

    recorded = record_proven.stageless_record()
    if recorded is None:
        raise MatrixError(f"[recipe.{recipe.id}]: no 1.x release of data/compat recorded the stage-less hooks' calls")
    tree = ast.parse(page.read_text(encoding="utf-8"))
    defined = {
        node.name: {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }
    owner = "Callback" if recipe.callbacks else "LightningModule"
    names = recipe.callbacks or (recipe.module,)
    hooks = {
        hook: entry["hooks"]
        for hook, entry in recorded["hooks"].get(owner, {}).items()
        if any(hook in defined.get(name, ()) for name in names)
    }
    if not hooks:
        raise MatrixError(f"[recipe.{recipe.id}]: {page} defines no stage-less hook a 1.x release recorded")
    calls = []
    for event in events:
        for hook, beside in sorted(hooks.items()):
            if event["hook"] in beside:
                calls.append([hook.rpartition("_")[2], event["stage"]])
    return calls


def _own_losses(recipe: Recipe, scenario: Scenario, record: dict) -> tuple:
    """Per training epoch, ``{metric: value}`` of every metric of ``recipe.targets``: the squared error against the
    metric's target over the epoch's batches, weighted as the recipe's quantity is."""
    epochs: dict[tuple[int, int], dict[str, list]] = {}
    for entry in record["train"]:
        per_metric = epochs.setdefault((entry["trainer"], entry["epoch"]), {})
        for name, target in recipe.targets:
            losses = loss_per_sample(entry["weights"], entry["batch"], scenario, target)[0]
            per_metric.setdefault(name, []).append(losses)
    values = [{name: reduce(losses, recipe.weighting) for name, losses in m.items()} for _, m in sorted(epochs.items())]
    return values, [(trainer, "fit") for trainer, _ in sorted(epochs)]


def _named(recipe: Recipe, runs: list[list[float]]) -> list[dict[str, Any]]:
    """``{metric name: value}`` per run: ``{idx}`` names one per dataloader, otherwise the recipe's one name."""
    named: list[dict[str, Any]] = []
    for run in runs:
        if len(recipe.metric) == 1 and "{idx}" in recipe.metric[0]:
            named.append({recipe.metric[0].format(idx=idx): value for idx, value in enumerate(run)})
        else:
            named.append(
                {recipe.metric[0]: run[0]} if len(run) == 1 else {f"{recipe.metric[0]} (one per dataloader)": run}
            )
    return named
