"""``python -m lightning_migrate.checker``: the ``lightning-migrate`` command."""

from lightning_migrate.checker.cli import main

raise SystemExit(main())
