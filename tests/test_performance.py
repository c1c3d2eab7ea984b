"""The memory page and the scaling note on the built site: plots drawn, figures printed, note linked."""

from __future__ import annotations

import html
import json
import re
import struct

from test_site import script_outputs

PAGE = "examples/performance/retained_memory"
OLD = "old contract (1.x outputs)"


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG from its IHDR chunk; fails the test on anything that is not a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_memory_page_shows_its_plots(site):
    page = site.page(PAGE)
    images = re.findall(r'<img[^>]+src="([^"]*sphx_glr_retained_memory_\d{3}\.png)"', page)
    assert len(set(images)) == 2, images  # retained bytes; process RSS
    for src in set(images):
        width, height = png_size((site.outdir / "examples" / "performance" / src).resolve().read_bytes())
        assert width >= 400 and height >= 200


def test_memory_page_prints_the_measured_table_and_the_1m_step_computation(site):
    outputs = "\n".join(script_outputs(site.page(PAGE)))
    table = outputs.split("training_step returns loss + logits: tensor bytes at epoch end")[1]
    rows = dict(re.findall(r"^(old contract \(1\.x outputs\)|callback-side cache)\s+([\d, ]+)$", table, flags=re.M))
    old, callback = ([int(n.replace(",", "")) for n in rows[key].split()] for key in (OLD, "callback-side cache"))
    assert len(old) == len(callback) == 5  # the example asserts how they compare; the page shows every checkpoint
    assert re.search(r"old contract: [\d,]+ GB of tensor data =\n  1,000,000 x \(4 \+ 4 x 256 x 1000\) bytes", outputs)


def test_memory_notebook_shows_the_conclusion_figure_from_the_hosted_site(site):
    """The page opens with the figure its code draws; the downloaded notebook shows it from the site (html_baseurl),
    where the build put it, never from a path of the build tree."""
    notebook = json.loads((site.outdir / "_downloads").rglob("retained_memory.ipynb").__next__().read_text("utf-8"))
    first_markdown = next("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    assert "The conclusion first" in first_markdown
    base = re.search(r'<link rel="canonical" href="([^"]+)index\.html"', site.page("index")).group(1)
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", first_markdown)
    assert images == [f"{base}_images/sphx_glr_retained_memory_001.png"], first_markdown[:800]
    assert (site.outdir / "_images" / "sphx_glr_retained_memory_001.png").is_file()


def test_scaling_note_points_to_the_measurements(site):
    page = site.page("explanation/retained-memory")
    assert 'href="../examples/performance/retained_memory.html"' in page
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "A 1M-step epoch on a large model" in text


TIME_PAGE = "examples/performance/time_per_epoch"
APPROACHES = [OLD, "module-side cache", "callback-side cache", "torchmetrics MeanMetric"]


def test_time_page_prints_one_ratio_per_approach_and_shape(site):
    outputs = "\n".join(script_outputs(site.page(TIME_PAGE)))
    for shape in ("loss only", "loss + logits"):
        table = re.search(rf"^{re.escape(shape)}: no cache (\d+) ms of CPU per epoch of 100 steps "
                          rf"\(its slowest epoch took (\d+\.\d\d) x its fastest\)\n((?:    .+\n?){{4}})",
                          outputs, flags=re.M)  # fmt: skip
        assert table, f"no timing table for {shape!r}"
        ratios = re.findall(r"^    (.+?)\s+(\d+\.\d\d) x$", table[3], flags=re.M)
        assert [name for name, _ in ratios] == APPROACHES


def test_time_page_plots_the_ratios(site):
    images = re.findall(r'<img[^>]+src="([^"]*sphx_glr_time_per_epoch_\d{3}\.png)"', site.page(TIME_PAGE))
    assert len(set(images)) == 1, images
    width, height = png_size((site.outdir / "examples" / "performance" / images[0]).resolve().read_bytes())
    assert width >= 400 and height >= 150


def test_memory_and_time_pages_link_each_other(site):
    assert 'href="time_per_epoch.html' in site.page(PAGE)
    assert 'href="retained_memory.html' in site.page(TIME_PAGE)
