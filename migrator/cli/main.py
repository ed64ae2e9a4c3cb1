"""Entry point of the `migrator` command.

Every command raises `MigratorError` subclasses for expected failures; `main()` turns them into one line
on stderr and the documented exit code (`migrator.errors`: 0 done, 1 failed, 2 refused or bad usage,
3 not found, 130 interrupted). `--debug` shows the traceback instead. Anything else is a bug: it still gets
one `error: internal error ...` line (exit 1), which the command-line property test treats as a failure.
"""

from __future__ import annotations

import importlib
import logging
import sys
from importlib import metadata

import click

from migrator.cli.interrupts import install_interrupt_handler
from migrator.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_REFUSED, MigratorError

# Command modules, imported lazily so that `migrator --help` stays fast and a missing optional
# dependency (pyspark) only affects its own command. Each module exposes `commands: list[click.Command]`.
COMMAND_MODULES = (
    "migrator.cli.devcluster",
    "migrator.cli.console",
    "migrator.cli.modes",
    "migrator.cli.status",
    "migrator.cli.offsets",
    "migrator.cli.groups",
    "migrator.cli.acl",
    "migrator.cli.cleanup",
    "migrator.cli.cutover",
    "migrator.cli.fleet",
    "migrator.cli.demo",
)


class _Context:
    debug: bool = False


def installed_version() -> str:
    """The installed distribution's version (pyproject.toml's, once installed)."""
    try:
        return metadata.version("migrator")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(installed_version(), "--version", "-V", prog_name="migrator", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.option("--log-level", default="WARNING", show_default=True, help="Python log level for stderr.")
@click.pass_context
def cli(ctx: click.Context, debug: bool, log_level: str) -> None:
    """Move Kafka consumer groups between ZooKeeper and Kafka coordination (KIP-125).

    Connection options also come from the environment ($MIGRATOR_ZOOKEEPER, $MIGRATOR_BOOTSTRAP_SERVER,
    $MIGRATOR_ZK_AUTH, $MIGRATOR_CONNECT_TIMEOUT, $MIGRATOR_COMMAND_CONFIG). Shell completion:
    eval "$(_MIGRATOR_COMPLETE=bash_source migrator)" (zsh_source, fish_source for those shells).

    \b
    Example:
      migrator dev-cluster up
      migrator set-mode kafka --zookeeper 127.0.0.1:2181 --group orders
    """
    logging.basicConfig(
        level=logging.DEBUG if debug else getattr(logging, log_level.upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ctx.ensure_object(_Context).debug = debug


def _register() -> None:
    for name in COMMAND_MODULES:
        module = importlib.import_module(name)
        for command in getattr(module, "commands", []):
            cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    _register()
    install_interrupt_handler()
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        rv = cli.main(args=argv, prog_name="migrator", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_FAILED
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        click.echo(f"error: {exc.format_message()}", err=True)
        return EXIT_REFUSED
    except MigratorError as exc:
        if debug:
            raise
        click.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: one line for the operator, the traceback with --debug
        if debug:
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        click.echo(f"error: internal error {type(exc).__name__}: {first} (run with --debug for details)", err=True)
        return EXIT_FAILED
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    sys.exit(main())
