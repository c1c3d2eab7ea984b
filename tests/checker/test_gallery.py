"""Every gallery example is checked: old-pattern examples are flagged with exactly the expected rules, the
replacement examples come out clean. A gallery file missing from the table fails the test, so each new example
states what the checker must say about it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from lightning_migrate.checker import check_source

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "gallery"

#: gallery file -> rule codes the checker must report (with multiplicity); empty: must be clean
EXPECTED: dict[str, Counter[str]] = {
    "core/old_outputs_hooks.py": Counter({"LM002": 2, "LM001": 1}),
    "core/callback_side_caching.py": Counter(),
    "core/module_side_caching.py": Counter(),
    # The old module it rewrites is the text of a file the page writes, not code of the page.
    "core/automatic_rewrite.py": Counter(),
    # Each stage page runs the removed hook first, then its replacement.
    "stages/validation_epoch_end.py": Counter({"LM001": 1}),
    "stages/test_epoch_end.py": Counter({"LM001": 1}),
    "stages/predict_epoch_end.py": Counter({"LM002": 2}),
    "stages/when_lightning_checks.py": Counter({"LM001": 3}),
    "stages/torchmetrics_no_cache.py": Counter(),
    # Pitfalls that keep an old signature are flagged; mistakes in new-style code are not the checker's to find.
    "pitfalls/renamed_hook_kept_outputs.py": Counter({"LM002": 2}),
    # `outputs=None` runs (Lightning calls the hook without it): a note, not a finding.
    "pitfalls/callback_outputs_argument.py": Counter({"LM002": 1}),
    "pitfalls/step_end_hooks_ignored.py": Counter({"LM005": 3}),
    "pitfalls/forgetting_to_clear.py": Counter(),
    "pitfalls/sanity_check_pollution.py": Counter(),
    "pitfalls/multiple_val_dataloaders.py": Counter(),
    # The old training and validation batch-hook signatures run first, then the replacements.
    "pitfalls/batch_hooks_dataloader_idx.py": Counter({"LM003": 1, "LM004": 1}),
    "pitfalls/epoch_and_batch_hooks_ignored.py": Counter({"LM006": 6}),
    "pitfalls/accumulated_loss_scaled.py": Counter(),
    "pitfalls/empty_outputs.py": Counter(),
    "pitfalls/monitoring_callbacks_read_cleared_cache.py": Counter(),
    "caching/hook_order.py": Counter(),
    "caching/uneven_last_batch.py": Counter(),
    "caching/detach_cached_tensors.py": Counter(),
    "caching/callback_owned_cache.py": Counter(),
    "caching/big_step_outputs.py": Counter(),
    "caching/outputs_keep_graph.py": Counter(),
    "caching/several_losses_manual_optimization.py": Counter(),
    "distributed/ddp_per_rank_caches.py": Counter(),
    "distributed/ddp_predict.py": Counter(),
    "distributed/ddp_same_log_calls.py": Counter(),
    "distributed/ddp_training_epoch_mean.py": Counter(),
    "distributed/ddp_gather_per_sample_vectors.py": Counter(),
    "distributed/ddp_predict_replaced_batch_sampler.py": Counter(),
    "pitfalls/interrupted_and_resumed_runs.py": Counter(),
    "performance/retained_memory.py": Counter(),
    "performance/time_per_epoch.py": Counter(),
}


def gallery_files() -> list[str]:
    return sorted(path.relative_to(GALLERY).as_posix() for path in GALLERY.rglob("*.py"))


def test_every_gallery_file_is_in_the_table():
    missing = sorted(set(gallery_files()) - set(EXPECTED))
    assert not missing, f"add these gallery files to EXPECTED in {Path(__file__).name}: {missing}"
    gone = sorted(set(EXPECTED) - set(gallery_files()))
    assert not gone, f"these files in EXPECTED are not in the gallery any more: {gone}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gallery_file_findings(name):
    findings = check_source((GALLERY / name).read_bytes(), GALLERY / name).findings
    assert Counter(f.code for f in findings) == EXPECTED[name]
    assert all(f.confident for f in findings)


def test_a_default_that_hides_outputs_is_a_note():
    path = GALLERY / "pitfalls/callback_outputs_argument.py"
    notes = [f for f in check_source(path.read_bytes(), path, notes=True).findings if f.note]
    assert [(f.code, f.fix) for f in notes] == [("LM002", None)]
    assert "a parameter with a default beyond the hook's own" in notes[0].message
