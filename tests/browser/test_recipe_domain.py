"""Every recipe page shows where its recipe works, beside the recipe: the ``.. recipe-domain::`` box of each row of
the scenario matrix (``data/scenarios.toml``) whose page is a site page, at a desktop and a phone width.

For each page: a box names (links the matrix section of) every recipe of the page but the traps a pitfall page
shows on purpose; the box lies inside the viewport's width; and it is in the section of the first code block that
defines the recipe's class, where a reader copies it -- just before it, or, on a page that shows the fix first,
just after it. Screenshots of each page's first box go to ``SCREENSHOT_DIR``
(``recipe-domain-<page>-<width>.png``).
"""

from __future__ import annotations

import pytest
from guide.scenario_matrix import page_docname, recipe_anchor

from migration_guide.scenarios import load_space

from ._util import SCREENSHOT_DIR, WIDTHS, open_page, reset_width, set_width

#: Rows that are not recipes to copy: the trap a pitfall page runs as evidence (its page shows no box for it).
TRAPS = {"naive_callback"}
RECIPES = [r for r in load_space().recipes if page_docname(r.page)]
PAGES = sorted({page_docname(r.page) for r in RECIPES})

BOXES = """
const viewport = document.documentElement.clientWidth;
const boxes = Array.from(document.querySelectorAll('.recipe-domain'));
const code = Array.from(document.querySelectorAll('div.highlight pre'));
const classBlock = name => code.find(pre => new RegExp('^class ' + name + '\\\\b', 'm').test(pre.innerText));
const classTop = name => {
  const block = classBlock(name);
  return block ? block.getBoundingClientRect().top + window.scrollY : null;
};
const sectionOf = node => node.closest('section');
return {
  viewport,
  boxes: boxes.map(box => ({
    rect: box.getBoundingClientRect().toJSON(),
    top: box.getBoundingClientRect().top + window.scrollY,
    title: box.querySelector('.admonition-title').innerText,
    links: Array.from(box.querySelectorAll('a')).map(a => a.getAttribute('href')),
    section: sectionOf(box) ? sectionOf(box).id : null,
    scrollWidth: box.scrollWidth,
    clientWidth: box.clientWidth,
  })),
  classes: Object.fromEntries(arguments[0].map(name => [name, classTop(name)])),
  sections: Object.fromEntries(arguments[0].map(name => {
    const block = classBlock(name);
    return [name, block && sectionOf(block) ? sectionOf(block).id : null];
  })),
};
"""


def recipe_class(recipe) -> str:
    """The class a reader copies for ``recipe``: the last its page defines for it (a callback that reads a module's
    cache comes after that module, in its own section)."""
    return recipe.define[-1]


@pytest.mark.parametrize("width", WIDTHS, ids=lambda width: f"{width}px")
@pytest.mark.parametrize("docname", PAGES)
def test_every_recipe_page_shows_its_domain_before_the_recipe(browser, base_url, docname, width):
    recipes = [r for r in RECIPES if page_docname(r.page) == docname and r.id not in TRAPS]
    set_width(browser, width)
    try:
        assert open_page(browser, f"{base_url}{docname}.html") == []
        found = browser.execute_script(BOXES, sorted({recipe_class(r) for r in recipes}))
    finally:
        reset_width(browser)
    boxes = found["boxes"]
    assert boxes, f"{docname}: no recipe-domain box"
    for box in boxes:
        assert box["title"].startswith("Where it works"), box["title"]
        assert 0 <= box["rect"]["left"] and box["rect"]["right"] <= found["viewport"], (docname, width, box["rect"])
        assert box["scrollWidth"] <= box["clientWidth"], f"{docname} at {width}px: the box scrolls sideways"
    for recipe in recipes:
        anchor = f"#{recipe_anchor(recipe.id)}"
        named = [box for box in boxes if any(link.endswith(anchor) for link in box["links"])]
        assert named, f"{docname}: no box names {recipe.id}"
        code_top = found["classes"][recipe_class(recipe)]
        assert code_top is not None, f"{docname}: no code block defines {recipe_class(recipe)}"
        section = found["sections"][recipe_class(recipe)]
        assert any(box["section"] == section for box in named), (
            f"{docname}: no box of {recipe.id} in the section of its code ({section})"
        )


@pytest.mark.parametrize("width", WIDTHS, ids=lambda width: f"{width}px")
@pytest.mark.parametrize("docname", ["examples/core/callback_side_caching", "examples/core/automatic_rewrite"])
def test_recipe_domain_screenshots(browser, base_url, docname, width):
    """Screenshots to look at: a page's first box, scrolled to the top of the window."""
    set_width(browser, width)
    try:
        open_page(browser, f"{base_url}{docname}.html")
        browser.execute_script(
            "document.querySelector('.recipe-domain').scrollIntoView({block: 'start', behavior: 'instant'});"
            "window.scrollBy(0, -80);"  # below the header a phone's theme keeps at the top
        )
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        name = docname.replace("/", "-")
        assert browser.save_screenshot(str(SCREENSHOT_DIR / f"recipe-domain-{name}-{width}.png"))
    finally:
        reset_width(browser)
