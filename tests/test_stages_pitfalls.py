"""The stages and pitfalls example pages show what Lightning raised at build time, and the checked numbers."""

from __future__ import annotations

import ast
import re

import pytest
from test_site import script_outputs


def output_text(site, docname: str) -> str:
    """All captured output of ``examples/<docname>``, one string."""
    return "\n".join(script_outputs(site.page(f"examples/{docname}")))


def lines_after(prefix: str, text: str) -> list[str]:
    """The rest of every output line that starts with ``prefix``."""
    return [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]


def test_validation_epoch_end_page(site):
    text = output_text(site, "stages/validation_epoch_end")
    assert "NotImplementedError: Support for `validation_epoch_end` has been removed" in text
    assert lines_after("training steps taken before the failure: ", text) == ["0"]
    rows = re.findall(r"epoch (\d+): on_validation_epoch_end mean ([0-9.]+) \(by hand: ([0-9.]+)\)", text)
    assert [int(epoch) for epoch, _, _ in rows] == [0, 1]
    assert all(mean == reference for _, mean, reference in rows)


def test_test_epoch_end_page(site):
    text = output_text(site, "stages/test_epoch_end")
    # trainer.fit trains the whole epoch; trainer.test then refuses the model.
    assert lines_after("trainer.fit finished: ", text) == ["4 training steps"]
    assert "NotImplementedError: Support for `test_epoch_end` has been removed" in text
    [(mean, reference)] = re.findall(r"on_test_epoch_end mean ([0-9.]+) \(by hand: ([0-9.]+)\)", text)
    assert mean == reference
    [returned] = lines_after("trainer.test returned ", text)
    assert f"{ast.literal_eval(returned)['test_loss']:.6f}" == mean


def test_predict_epoch_end_page(site):
    text = output_text(site, "stages/predict_epoch_end")
    assert "TypeError: OldModuleHook.on_predict_epoch_end() missing 1 required positional argument: 'results'" in text
    assert "TypeError: OldCallbackHook.on_predict_epoch_end() missing 1 required positional argument: 'outputs'" in text
    assert lines_after("predict batches run before the failure: ", text) == ["5", "5"]
    replacements = re.findall(r"^(.+): shape \(20, 2\), equal to the reference: (\w+)$", text, flags=re.M)
    assert [name for name, _ in replacements] == [
        "trainer.predict return value",
        "trainer.predict_loop.predictions (callback)",
        "predict_step cache (module)",
    ]
    assert all(equal == "True" for _, equal in replacements)


def test_torchmetrics_page(site):
    text = output_text(site, "stages/torchmetrics_no_cache")
    rows = re.findall(r"epoch (\d+): MeanMetric ([0-9.]+), self.log scalar ([0-9.]+) \(by hand: ([0-9.]+)\)", text)
    assert [int(epoch) for epoch, *_ in rows] == [0, 1, 2]
    assert all(metric == scalar == reference for _, metric, scalar, reference in rows)
    # Three different epoch values: the metric did not carry batches over from one epoch to the next.
    assert len({reference for *_, reference in rows}) == 3
    assert lines_after("MeanMetric.update_count at each validation epoch start: ", text) == ["[0, 0, 0]"]
    assert lines_after("MeanMetric.update_count at each validation end: ", text) == ["[3, 3, 3]"]


def test_when_lightning_checks_page(site):
    text = output_text(site, "stages/when_lightning_checks")
    for hook in ("training_epoch_end", "validation_epoch_end", "test_epoch_end"):
        assert f"NotImplementedError: Support for `{hook}` has been removed" in text
    assert lines_after("training steps taken: ", text) == ["0", "0"]
    assert "plain BoringModel: 4 training steps, 0 validation batches" in text
    assert "trainer.fit raised: None; training steps taken: 4" in text
    assert lines_after("test batches run: ", text) == ["0"]


def test_renamed_hook_page(site):
    text = output_text(site, "pitfalls/renamed_hook_kept_outputs")
    error = "TypeError: HalfMigrated.on_validation_epoch_end() missing 1 required positional argument: 'outputs'"
    assert text.count(error) == 2
    assert "sanity check started: True, finished: False" in text
    # Failing in the sanity check, failing without it, and the fix.
    assert lines_after("training steps taken: ", text) == ["0", "4", "4"]
    pattern = r"validation means \(sanity check, epoch 0\): (\[.*\]); epoch 0 by hand: (.*)"
    [(means, reference)] = re.findall(pattern, text)
    means = ast.literal_eval(means)
    assert len(means) == 2
    assert f"{means[-1]:.6f}" == reference


def test_callback_outputs_page(site):
    text = output_text(site, "pitfalls/callback_outputs_argument")
    assert "TypeError: OldCallback.on_train_epoch_end() missing 1 required positional argument: 'outputs'" in text
    assert "training batches run before the failure: 2; optimizer steps: 2" in text
    assert "outputs received at each epoch end: [None, None]" in text
    rows = re.findall(r"epoch (\d+): callback mean ([0-9.]+) \(plain loop: ([0-9.]+)\)", text)
    assert [int(epoch) for epoch, _, _ in rows] == [0, 1]
    assert all(mean == reference for _, mean, reference in rows)


def test_forgetting_to_clear_page(site):
    text = output_text(site, "pitfalls/forgetting_to_clear")
    runs = {
        name: (ast.literal_eval(logged), ast.literal_eval(sizes), ast.literal_eval(left))
        for name, logged, sizes, left in re.findall(
            r"^(\w+): logged val_loss (\[.*?\]), entries per epoch (\[.*?\]), "
            r"left in the cache after each epoch end (\[.*?\])$",
            text,
            flags=re.M,
        )
    }
    assert runs == {
        "ScriptedValidation": ([2.0, 6.0], [2, 2], [0, 0]),
        "NoClear": ([2.0, 4.0], [2, 4], [2, 4]),
        "Overwrite": ([3.0, 7.0], [1, 1], [0, 0]),
    }


def test_sanity_check_pollution_page(site):
    text = output_text(site, "pitfalls/sanity_check_pollution")
    runs = {
        name: (int(steps), int(calls), ast.literal_eval(means), ast.literal_eval(best))
        for name, steps, calls, means, best in re.findall(
            r"^(\w+): (\d+) validation steps, (\d+) on_validation_epoch_end calls, "
            r"\(entries, mean\) per run (\[.*?\]), best values recorded (\[.*?\])$",
            text,
            flags=re.M,
        )
    }
    assert set(runs) == {"SkipsWithoutClearing", "TracksSanityCheck", "Guarded"}
    assert all(steps == 6 and calls == 2 for steps, calls, _, _ in runs.values())
    [(entries, mean)] = runs["SkipsWithoutClearing"][2]
    assert entries == 6
    assert mean == pytest.approx(13 / 6)
    assert runs["TracksSanityCheck"][2:] == ([(2, 1.5), (4, 2.5)], [1.5])
    assert runs["Guarded"][2:] == ([(4, 2.5)], [2.5])


def test_multiple_val_dataloaders_page(site):
    text = output_text(site, "pitfalls/multiple_val_dataloaders")
    [error] = [line for line in text.splitlines() if line.startswith("RuntimeError: ")]
    assert "`dataloader_idx`" in error
    assert "NoDataloaderIdx.validation_step()" in error
    assert lines_after("training steps taken: ", text) == ["1"]
    [(calls, means)] = re.findall(r"on_validation_epoch_end calls: (\d+); means per run: (.*)", text)
    assert int(calls) == 2
    assert ast.literal_eval(means) == [{0: 1.5, 1: 15.0}, {0: 1.5, 1: 15.0}]


def test_step_end_hooks_page(site):
    text = output_text(site, "pitfalls/step_end_hooks_ignored")
    assert "training steps: 3; *_step_end calls: {'train': 0, 'validation': 0, 'test': 0}" in text
    assert "warnings that mention a *_step_end hook: []" in text
    assert (
        "training steps: 3; batch-end calls: {'train': 3, 'validation': 3, 'test': 3}; work done in training_step: 3"
        in text
    )
