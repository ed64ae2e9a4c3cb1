"""What an operator does in the middle of a migration: the I/O behind `migrator set-mode`, `status`,
`offsets` and `acl`. Decisions live in pure functions (`migrator.coordination.preflight`,
`migrator.ops.status.build_report`, ...); the modules here read, call them, and write."""
