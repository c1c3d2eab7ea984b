"""The built site: every example page exists and shows output captured from the run."""

from __future__ import annotations

import html
import re
from importlib import metadata

import pytest
from conftest import GALLERY_SCRIPTS

LIGHTNING = metadata.version("lightning")


def script_outputs(page: str) -> list[str]:
    """The text of every captured-output block sphinx-gallery rendered on ``page``."""
    blocks = re.findall(r'<div class="sphx-glr-script-out[^"]*">(.*?)</div>\s*</div>', page, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", block)) for block in blocks]


def test_the_build_executed_every_gallery_script(site):
    """The scripts the tests check page by page are exactly the ones the build ran (none skipped, none extra)."""
    counts = re.search(r"executed (\d+) out of (\d+) files", site.output)
    assert counts and int(counts[1]) == int(counts[2]) == len(GALLERY_SCRIPTS) > 0, site.output[-3000:]


@pytest.mark.parametrize("script", GALLERY_SCRIPTS, ids=str)
def test_every_example_page_shows_its_captured_output(site, script):
    page = site.page(f"examples/{script.with_suffix('').as_posix()}")
    outputs = script_outputs(page)
    assert outputs, f"{script}: the page shows no captured output"
    assert any(f"Lightning {LIGHTNING}" in out for out in outputs), f"{script}: the page does not name Lightning"


def test_old_pattern_page_shows_what_lightning_raised(site):
    outputs = "\n".join(script_outputs(site.page("examples/core/old_outputs_hooks")))
    # What the build's Lightning raised for each of the three old shapes, and how many steps ran first.
    assert "TypeError: ModuleHookWithOutputs.on_train_epoch_end() missing 1 required positional argument" in outputs
    assert "TypeError: CallbackHookWithOutputs.on_train_epoch_end() missing 1 required positional argument" in outputs
    assert "NotImplementedError: Support for `training_epoch_end` has been removed" in outputs
    steps = [int(n) for n in re.findall(r"training steps taken before the failure: (\d+)", outputs)]
    assert steps == [4, 4, 0]


def test_myst_page_was_executed(site):
    text = html.unescape(re.sub(r"<[^>]+>", "", site.page("which-replacement")))
    assert f"Lightning {LIGHTNING}" in text
    row = r"^(Trainer defaults|accumulate_grad_batches=3)\s+(\d)\s+([0-9.]+)\s+([0-9.]+)\s"
    rows = re.findall(row, text, flags=re.M)
    assert [(name, int(epoch)) for name, epoch, *_ in rows] == [
        ("Trainer defaults", 0),
        ("Trainer defaults", 1),
        ("accumulate_grad_batches=3", 0),
        ("accumulate_grad_batches=3", 1),
    ]


def test_downloads_offered_for_every_example(site):
    downloads = {p.name for p in (site.outdir / "_downloads").rglob("*") if p.is_file()}
    for script in GALLERY_SCRIPTS:
        assert script.name in downloads
        assert script.with_suffix(".ipynb").name in downloads
