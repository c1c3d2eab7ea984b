"""How the site is built: Sphinx extensions and pandoc filters that state no Lightning fact.

What a build executes and when (``execution_mode``, ``example_workers``, ``gallery_orphans``, and ``run_cache``: the
probes and the scenario matrix once per set of inputs in a test run), the warnings it
accepts (``declared_warnings``), the site's address (``site_address``), how inline code wraps
(``identifier_breaks``), how the search splits a query (``search_splitter``), and how the downloaded notebooks'
text becomes Markdown (``notebook_baseurl`` with the pandoc reader ``notebook_rst_reader.lua`` and filter
``notebook_links.lua``). The extensions that render what Lightning does are in ``guide``.
"""
