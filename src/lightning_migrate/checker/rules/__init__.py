"""The rules, one module each; importing this package registers them all (in code order)."""

from lightning_migrate.checker.rules import (  # noqa: F401 - imported to register
    lm001_epoch_end_methods,
    lm002_epoch_end_parameters,
    lm003_train_batch_dataloader_idx,
    lm004_eval_batch_dataloader_idx,
    lm005_step_end,
    lm006_never_called,
    lm007_unknown_hooks,
)
