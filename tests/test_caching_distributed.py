"""The caching-pitfall pages, the DDP page and the symptom index of the built site show what their runs measured."""

from __future__ import annotations

import ast
import html
import json
import re
import sys
from pathlib import Path

from conftest import ROOT
from test_site import script_outputs

#: A printed error or warning line, as the symptom index defines it (independent copy of its rule).
SYMPTOM = re.compile(r"^\s*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Warning|Exception|Interrupt): .+)$", re.M)


def registry():
    """The project's registry module (``src/`` is not installed; the Sphinx conf puts it on the path the same way)."""
    if str(ROOT / "src") not in sys.path:
        sys.path.insert(0, str(ROOT / "src"))
    from lightning_migrate import registry as module

    return module


def outputs(site, docname: str) -> str:
    return "\n".join(script_outputs(site.page(docname)))


def text_of(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def symptom_items(site) -> list[tuple[str, list[str]]]:
    """``(text, hrefs)`` of every entry of the symptom index page."""
    page = site.page("reference/symptoms")
    items = []
    for listing in re.findall(r'<ul class="symptom-index[^"]*">(.*?)</ul>', page, flags=re.S):
        for item in re.findall(r"<li>(.*?)</li>", listing, flags=re.S):
            items.append((text_of(item), re.findall(r'href="([^"]+)"', item)))
    return items


def test_hook_order_page_draws_and_asserts_the_order(site):
    page = site.page("examples/caching/hook_order")
    images = re.findall(r'src="(\.\./\.\./_images/sphx_glr_hook_order_\d+\.png)"', page)
    assert images, "the hook-order page shows no figure"
    assert all((site.outdir / "examples" / "caching" / src).resolve().is_file() for src in images)
    out = outputs(site, "examples/caching/hook_order")
    listed = re.findall(r"^\s+\d+\s+(on_\w+)$", out, flags=re.M)
    assert listed[0] == "on_train_batch_end"
    assert listed.index("on_validation_epoch_end") < listed.index("on_train_epoch_end")
    assert "'on_validation_epoch_end': ['train', 'train', 'train', 'val', 'val'], 'on_train_epoch_end': []" in out
    assert "validation runs in the epoch: 2" in out
    assert "cache cleared in on_validation_epoch_end held [2, 2] batches per run" in out
    assert "cache cleared in on_train_epoch_end held [4] batches" in out


def test_uneven_last_batch_page(site):
    out = outputs(site, "examples/caching/uneven_last_batch")
    assert "batch sizes: [4, 4, 2]" in out
    assert re.search(r"^RuntimeError: .+", out, flags=re.M)
    assert "torch.cat of the predictions: shape (10, 2)" in out
    assert "torch.stack of the batch means: shape (3,)" in out


def test_detach_page_measures_the_graph(site):
    out = outputs(site, "examples/caching/detach_cached_tensors")
    undetached = ast.literal_eval(re.search(r"without \.detach\(\): (\{.*\})", out).group(1))
    detached = ast.literal_eval(re.search(r"with \.detach\(\)\s*: (\{.*\})", out).group(1))
    assert undetached["requires_grad"] == undetached["with_grad_fn"] == undetached["tensors"] == 16
    assert undetached["nodes"] > 0 and undetached["saved_bytes"] > 0
    assert detached["requires_grad"] == detached["with_grad_fn"] == detached["nodes"] == detached["saved_bytes"] == 0
    assert detached["cached_bytes"] == undetached["cached_bytes"] > 0
    assert re.search(r"^RuntimeError: .*numpy", out, flags=re.M)


def test_callback_owned_cache_page_counts_sanity_batches(site):
    out = outputs(site, "examples/caching/callback_owned_cache")
    assert "appends: 5; runs (sanity check?, cached batches): [(True, 2), (False, 3)]" in out
    assert "appends: 3; runs (sanity check?, cached batches): [(False, 3)]" in out


def test_big_step_outputs_page_measures_bytes(site):
    page = site.page("examples/caching/big_step_outputs")
    assert re.search(r'src="\.\./\.\./_images/sphx_glr_big_step_outputs_\d+\.png"', page)
    out = outputs(site, "examples/caching/big_step_outputs")
    held = {
        name.strip(): (int(before), int(after))
        for name, before, after in re.findall(
            r"^\s*([\w. ()]+?): +(\d+) bytes at epoch end, (\d+) after clear\(\)$", out, flags=re.M
        )
    }
    batch = 64 * 32 * 4
    assert held["whole batch"] == (8 * batch, 0)
    assert held["slice"] == (8 * batch, 0)
    assert held["slice copy"] == (8 * 64 * 2 * 4, 0)
    assert held["float64 scalar"] == (8 * 8, 0)
    assert "cached tensors still alive after clear(): 0" in out


def test_ddp_page_shows_per_rank_caches(site):
    out = outputs(site, "examples/distributed/ddp_per_rank_caches")
    assert re.findall(r"^rank (\d): (\d+) cached samples$", out, flags=re.M) == [("0", "5"), ("1", "5")]
    assert "all_gather of a scalar with 2 processes: ndim 1" in out
    assert "all_gather of a scalar with 1 process: shape ()" in out
    assert "mean sample, rank 0 only: 4.0, sync_dist=True: 4.5" in out
    assert "1 process: 10 cached samples, mean sample 4.5" in out
    assert re.search(r"^PossibleUserWarning: .*'mean_sample'", out, flags=re.M)


def probe_document(site) -> dict:
    path = site.outdir / ".doctrees" / "probe-records.json"
    return json.loads(path.read_text(encoding="utf-8"))


def test_symptom_index_lists_every_probe_error_with_its_fix(site):
    items = symptom_items(site)
    errors = [r for r in probe_document(site)["records"] if r["error_type"]]
    assert errors, "the probes recorded no error at all"
    for record in errors:
        text = f"{record['error_type']}: {record['error_message']}"
        hrefs = [hrefs for item_text, hrefs in items if text in item_text]
        assert hrefs, f"the symptom index misses the probe error of {record['pattern']}: {text}"
        expected = registry().get(record["pattern"]).example + ".html"
        assert any(h.split("#")[0].endswith(expected) for h in hrefs[0]), (record["pattern"], hrefs)


def test_symptom_index_lists_every_error_an_example_printed(site):
    items = symptom_items(site)
    gallery = Path(site.tree, "gallery")
    printed = 0
    for script in sorted(gallery.rglob("*.py")):
        docname = "examples/" + script.relative_to(gallery).with_suffix("").as_posix()
        for line in SYMPTOM.findall(outputs(site, docname)):
            printed += 1
            hrefs = [hrefs for item_text, hrefs in items if line.strip() in item_text]
            assert hrefs, f"the symptom index misses {line!r} printed by {docname}"
            assert any(h.split("#")[0].endswith(f"{Path(docname).name}.html") for h in hrefs[0]), (line, hrefs)
    assert printed >= 4  # at least the errors and the warning of this branch's pages


def test_symptom_index_links_resolve(site):
    page_dir = site.outdir / "reference"
    hrefs = [h for _, item_hrefs in symptom_items(site) for h in item_hrefs]
    assert hrefs
    for href in hrefs:
        assert (page_dir / href.split("#")[0]).resolve().is_file(), href
