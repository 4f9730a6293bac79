"""`playbook migrate`'s repair, pure but for the source it is handed: `flow` (the order of operations,
once, over any `Source`), `engine` (judge, plan), `plan` and `change` (the plan file, one thread's
change), `prove` (the proof on staging), `report` (the `MigrateReport`)."""
