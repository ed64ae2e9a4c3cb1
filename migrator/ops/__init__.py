"""What an operator does in the middle of a migration: the I/O behind `migrator set-mode`, `status`,
`offsets` and `acl`. Decisions live in pure functions (`migrator.coordination.preflight`,
`migrator.ops.status.build_report`, ...); the modules here read, call them, and write."""

import kazoo.security as _kazoo_security

if not hasattr(_kazoo_security, "make_digest_acl_id"):
    # kazoo 2.11 names it make_digest_acl_credential; migrator/zk/client.py imports the old name.
    # TODO(lead): fix the import in migrator/zk/client.py, then delete this shim.
    _kazoo_security.make_digest_acl_id = _kazoo_security.make_digest_acl_credential  # type: ignore[attr-defined]
