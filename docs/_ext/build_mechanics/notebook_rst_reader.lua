--[[
Pandoc custom reader: one gallery text block, read as rST, its headings ranked as on the whole page.

sphinx-gallery hands pandoc one text block at a time (its ``pypandoc`` option, set in conf.py). pandoc's rST
reader ranks headings by the order in which a block uses their underline characters, so a block that opens with a
``-----`` section would make it a level-1 heading, the rank of the page's title. The gallery writes every page the
same way: ``=`` under the title, ``-`` under a section, ``~`` under a subsection (then ``^`` and ``"``). This
reader reads the block with pandoc's own rST reader (with ``smart``, so ``--`` and quotes come out as Sphinx's
smartquotes print them) and gives each heading the level of its underline character.

A heading underlined with another character, or a block whose headings this reader cannot pair with their
underlines, stops the conversion with an error naming the heading.
]]

local LEVELS = { ["="] = 1, ["-"] = 2, ["~"] = 3, ["^"] = 4, ['"'] = 5 }

--- The character a line repeats, when the line is an rST adornment (one punctuation character, repeated).
local function adornment(line)
  local stripped = line:gsub("%s+$", "")
  local char = stripped:sub(1, 1)
  if #stripped >= 1 and char:match("%p") and stripped == string.rep(char, #stripped) then
    return char
  end
end

--- The underline character of every heading of ``text``, in order (an overline is not counted twice).
local function underlines(text)
  local found, previous = {}, ""
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    local char = adornment(line)
    if char and previous:match("^%S") and not adornment(previous) then
      table.insert(found, { char = char, title = previous })
    end
    previous = line
  end
  return found
end

function Reader(input, opts)
  local text = tostring(input)
  local doc = pandoc.read(text, "rst+smart", opts)
  local marks = underlines(text)
  local count = 0
  doc = doc:walk({
    Header = function(header)
      count = count + 1
      local mark = marks[count]
      local title = pandoc.utils.stringify(header.content)
      if not mark then
        error("notebook_rst_reader.lua: cannot find the underline of the heading '" .. title .. "'", 0)
      end
      local level = LEVELS[mark.char]
      if not level then
        error(
          string.format(
            "notebook_rst_reader.lua: the heading '%s' is underlined with '%s'; gallery pages use = (title), - (section), "
              .. "~ (subsection), ^ and \"",
            title,
            mark.char
          ),
          0
        )
      end
      header.level = level
      return header
    end,
  })
  if count ~= #marks then
    error(
      string.format("notebook_rst_reader.lua: %d headings but %d underlines in the block that starts '%s'", count, #marks,
        text:match("^%s*([^\n]*)")),
      0
    )
  end
  return doc
end
