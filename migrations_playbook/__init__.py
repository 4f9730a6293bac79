"""The migration playbook: rules, records, contract locks, and the `playbook` CLI."""
