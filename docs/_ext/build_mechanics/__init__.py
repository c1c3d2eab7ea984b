"""How the site is built: Sphinx extensions and pandoc filters that state no Lightning fact.

What a build executes and when (``execution_mode``, ``example_workers``, ``gallery_orphans``, and ``run_cache``: the
probes and the scenario matrix once per set of inputs in a test run), the warnings it accepts
(``declared_warnings``), the site's address (``site_address``), the repository's address and release tag
(``project_links``), how inline code wraps (``identifier_breaks``) and tables read on a phone (``phone_tables``),
the search index's entries across rebuilds (``search_index_entries``), and how the downloaded notebooks' text
becomes Markdown (``notebook_baseurl`` with the pandoc reader ``notebook_rst_reader.lua`` and filter
``notebook_links.lua``). The extensions that render what Lightning does are in ``guide``.
"""
