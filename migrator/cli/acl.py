"""`migrator acl protect|show`."""

from __future__ import annotations

import click

from migrator.cli.common import Connection, connection_options, echo_json, group_option, json_option, require_group
from migrator.cli.common import zookeeper as open_zookeeper
from migrator.errors import EXIT_OK
from migrator.ops import acl as ops_acl
from migrator.protocol.acl import perms_word
from migrator.table import align
from migrator.zk.acl import ACL
from migrator.zk.client import digest_acl_id


@click.group("acl")
def acl_group() -> None:
    """Restrict who may switch a group's mode (ZooKeeper ACLs)."""


@acl_group.command("protect")
@connection_options(kafka=False)
@group_option
@click.option("--admin", required=True, metavar="digest:USER:PASSWORD", help="The only identity that may set the mode.")
@click.option(
    "--dry-run", is_flag=True, help="Show the ACLs it would set (and the nodes it would create); write nothing."
)
def protect_cmd(conn: Connection, group: str, admin: str, dry_run: bool) -> int:
    """Let only ADMIN write migration/mode and migration/audit; consumers keep every right they use.

    World keeps read everywhere and create/delete/write under ids, owners, offsets, migration/ids and
    migration/authority (what legacy and bridge connectors do). The mode node, the audit trail and the
    migration node itself become world-readable, admin-writable. Connects as --zk-auth, else as ADMIN.
    Afterwards, `set-mode` needs `--zk-auth <ADMIN>`. It creates the group's nodes when the group is new,
    but never a chroot: a chroot that does not exist exits 3.

    \b
    Example:
      migrator acl protect -z 127.0.0.1:2181 -g orders --admin digest:ops:s3cret --dry-run
      migrator acl protect -z 127.0.0.1:2181 -g orders --admin digest:ops:s3cret
    """
    digest_acl_id(admin)  # a malformed identity fails here, before anything is written
    with open_zookeeper(conn, auth=conn.zk_auth or admin) as zk:
        done = ops_acl.planned(zk, group, admin) if dry_run else ops_acl.protect(zk, group, admin)
    for path, acls in done:
        click.echo(f"{path}  " + ", ".join(f"{a.id.scheme}:{a.id.id}={perms_word(a.perms)}" for a in acls))
    if dry_run:
        click.echo(f"dry run: {group}: nothing written (whether the connection may set them shows only on the write)")
        return EXIT_OK
    click.echo(f"{group}: protected; set-mode now needs --zk-auth {admin.split(':')[0]}:{admin.split(':')[1]}:…")
    return EXIT_OK


def acl_doc(acl: ACL) -> dict[str, str]:
    """One ACL of `acl show --json`."""
    return {"scheme": acl.id.scheme, "id": acl.id.id, "perms": perms_word(acl.perms)}


@acl_group.command("show")
@connection_options(kafka=False)
@group_option
@json_option
def show_cmd(conn: Connection, group: str, as_json: bool) -> int:
    """Show the ACLs of every node of the group's layout (perms as c d r w a).

    \b
    Example:
      migrator acl show -z 127.0.0.1:2181 -g orders
    """
    with open_zookeeper(conn) as zk:
        require_group(zk, group)
        nodes = ops_acl.show(zk, group)
    if as_json:
        echo_json({path: None if acls is None else [acl_doc(a) for a in acls] for path, acls in nodes})
        return EXIT_OK
    rows = [
        (
            path,
            "(absent)" if acls is None else ", ".join(f"{a.id.scheme}:{a.id.id}={perms_word(a.perms)}" for a in acls),
        )
        for path, acls in nodes
    ]
    click.echo("\n".join(align(rows)))
    return EXIT_OK


commands: list[click.Command] = [acl_group]
