--[[
Pandoc Lua filter: the Sphinx roles of a gallery text block, as a downloaded notebook shows them.

sphinx-gallery converts each text block of an example to Markdown with pandoc (its ``pypandoc`` option, set in
conf.py). Pandoc's rST reader keeps a role it does not know as inline code with the class ``interpreted-text``
and the attribute ``role``; this filter turns those into what Sphinx shows on the page:

* ``:doc:`title </docname>``` becomes a link to ``<html_baseurl><docname>.html``, the page on the hosted site
  (a notebook is read away from the site, so a relative link would lead nowhere). The base URL is the document
  metadata field ``html_baseurl``, which docs/_ext/build_mechanics/notebook_baseurl.py passes from Sphinx's config.
* ``:func:``, ``:meth:``, ``:class:``, ``:mod:`` ... (the Python domain) become inline code, as on the page,
  where nothing documents those objects: ``time.process_time()``.
* ``:claim:`id``` becomes the claim's wording, as on the page: the claims extension (docs/_ext/guide/claims.py)
  writes every claim's rendered wording, one ``id<TAB>reST text`` line each, to the file named by the environment
  variable ``GUIDE_CLAIMS_FILE``; the wording is read as rST and its own roles are converted like the block's
  (``:claim:`Id```, capitalized, starts a sentence: the wording's first letter is capitalized).
* Sphinx's default role (single backticks) becomes emphasis, as Sphinx renders it.
* ``.. recipe-domain:: <recipe id> ...`` (docs/_ext/scenario_matrix.py: the box saying where a recipe holds,
  rendered from the build's scenario matrix, which a notebook does not have) becomes a paragraph linking each
  recipe's section of the hosted reference page: ``<html_baseurl>reference/scenarios.html#recipe-<id>``, the id
  written as Sphinx writes it (``_`` as ``-``).
* ``.. rst-class:: fix-label`` (the class of the "After" line above the code a fix page's reader copies) is
  dropped, the line itself kept; and a sphinx-design ``.. dropdown:: Title`` becomes its title in bold, then its content: a notebook
  shows everything unfolded.
* An image given from the site's root (``.. image:: /examples/performance/images/sphx_glr_retained_memory_001.png``,
  a figure the example's own code draws) is shown from the hosted site, where Sphinx copies every image a page
  uses to ``_images/`` under its file name: ``<html_baseurl>_images/sphx_glr_retained_memory_001.png``.

pandoc sees one text block at a time, without the page it belongs to, so a ``:doc:`` target must be absolute
(``/examples/core/callback_side_caching``) and carry its link text (the target's title is Sphinx's to know).
Anything else (a relative target, a ``:ref:`` label, which Sphinx resolves only after reading every page, or a
role this filter does not know) stops the conversion with an error naming the role as written, so the build
fails and says what to change.
]]

local baseurl
local claims = {}

--- Python-domain roles, shown as inline code; the callable ones get "()" as Sphinx adds them.
local PYTHON_ROLES = { func = true, meth = true, class = true, mod = true, attr = true, exc = true, data = true, obj = true }
local CALLABLE = { func = true, meth = true }

local function fail(role, text, why)
  error(string.format("notebook_links.lua: :%s:`%s` in a gallery text block: %s", role, text, why), 0)
end

--- "title <target>" -> title, target; "target" -> nil, target.
local function split_title(text)
  local title, target = text:match("^(.-)%s*<([^<>]+)>$")
  if title and title:match("%S") then
    return title, target
  end
  return nil, text
end

local function read_baseurl(meta)
  local value = meta.html_baseurl and pandoc.utils.stringify(meta.html_baseurl) or ""
  if not value:match("^https?://[^/]+") then
    error("notebook_links.lua: the metadata field html_baseurl must be the site's http(s) address, got '" .. value .. "'", 0)
  end
  baseurl = value:gsub("/*$", "/")
  local path = os.getenv("GUIDE_CLAIMS_FILE")
  if path and path ~= "" then
    local file = io.open(path, "r")
    if not file then
      error("notebook_links.lua: cannot read the claims' wordings from '" .. path .. "'", 0)
    end
    for line in file:lines() do
      local id, text = line:match("^([^\t]+)\t(.*)$")
      if id then
        claims[id] = text
      end
    end
    file:close()
  end
end

local function doc_link(text)
  local title, target = split_title(text)
  if not title then
    fail("doc", text, "give the link its text, :doc:`text </docname>` (pandoc cannot look up the page's title)")
  end
  if target:sub(1, 1) ~= "/" then
    fail("doc", text, "write the target from the site's root, </examples/...>: pandoc does not know the page it converts")
  end
  return pandoc.Link(pandoc.Inlines(title), baseurl .. target:sub(2) .. ".html")
end

local function python_code(role, text)
  local title, target = split_title(text)
  local shown = title or target:gsub("^[~!]+", "")
  if not title and target:sub(1, 1) == "~" then
    shown = shown:match("([^.]+)$")
  end
  if CALLABLE[role] and not title and not shown:match("%)$") then
    shown = shown .. "()"
  end
  return pandoc.Code(shown)
end

local role, default_role

--- The claim's wording, read as rST, its roles converted as in the block around it.
local function claim_text(text)
  local id = text:match("^%s*(.-)%s*$")
  local capital = id:match("^%u") ~= nil -- :claim:`Id` starts a sentence: its first letter capitalized
  local wording = claims[id:gsub("^%u", string.lower)]
  if not wording then
    fail("claim", text, "no such claim in the file the claims extension wrote (data/claims.toml declares them)")
  end
  if capital then
    wording = wording:gsub("^%l", string.upper)
  end
  local blocks = pandoc.read(wording, "rst+smart").blocks
  if #blocks ~= 1 or blocks[1].t ~= "Para" then
    fail("claim", text, "its wording is not one paragraph of inline text")
  end
  return blocks[1].content:walk({ Code = role, Span = default_role })
end

role = function(code)
  if not code.classes:includes("interpreted-text") then
    return nil
  end
  local name = (code.attributes.role or ""):gsub("^py:", "")
  if name == "claim" then
    return claim_text(code.text)
  elseif name == "doc" then
    return doc_link(code.text)
  elseif PYTHON_ROLES[name] then
    return python_code(name, code.text)
  elseif name == "ref" then
    fail(name, code.text, "Sphinx resolves labels after the notebooks are written; link the page with :doc:`text </docname>`")
  end
  fail(name, code.text, "this role has no Markdown form here (docs/_ext/build_mechanics/notebook_links.lua)")
end

default_role = function(span)
  if span.classes:includes("title-ref") then
    return pandoc.Emph(span.content)
  end
end

local function hosted_image(image)
  if image.src:sub(1, 1) == "/" then
    image.src = baseurl .. "_images/" .. image.src:match("([^/]+)$")
    return image
  end
  if not image.src:match("^https?://") then
    error("notebook_links.lua: image '" .. image.src .. "' in a gallery text block: give it from the site's root (/examples/...)", 0)
  end
end

--- pandoc reads an rST directive it does not know as a Div with the directive's name as its class and the
--- arguments as its content.
local function recipe_domain(div)
  if not div.classes:includes("recipe-domain") then
    return nil
  end
  local inlines = pandoc.Inlines({ pandoc.Str("Where this recipe works, and what to use where it does not:") })
  local count = 0
  for id in pandoc.utils.stringify(div.content):gmatch("%S+") do
    local anchor = "recipe-" .. id:gsub("_", "-")
    count = count + 1
    if count > 1 then
      inlines:insert(pandoc.Str(","))
    end
    inlines:insert(pandoc.Space())
    inlines:insert(pandoc.Link(pandoc.Inlines({ pandoc.Str("the tested configurations (" .. id .. ")") }),
      baseurl .. "reference/scenarios.html#" .. anchor))
  end
  inlines:insert(pandoc.Str("."))
  return pandoc.Para(inlines)
end

--- The page-layout directives of a gallery text block, as a notebook shows them (pandoc reads each as a Div).
local function page_layout(div)
  if div.classes:includes("rst-class") and pandoc.utils.stringify(div.content) == "fix-label" then
    return {}
  end
  if div.classes:includes("dropdown") and div.content[1] and div.content[1].t == "Para" then
    local blocks = pandoc.Blocks({ pandoc.Para({ pandoc.Strong(div.content[1].content) }) })
    blocks:extend({ table.unpack(div.content, 2) })
    return blocks
  end
end

return {
  { Meta = read_baseurl },
  { Code = role, Span = default_role, Image = hosted_image, Div = recipe_domain },
  { Div = page_layout },
}
