"""The `rclify` command line: a thin layer over one module per pipeline step.

Each subcommand lives in rclify/commands/<name>.py and provides
    add_parser(subparsers) -> argparse.ArgumentParser
    run(args) -> int            (the exit code)
Errors a user can meet are RclifyError: shown as one line, exit code 2.  SIGINT, SIGTERM and SIGHUP
end a command the same way (rclify/interrupt.py): its rollbacks and cleanups run, its child
processes are ended with it, exit 128 + the signal's number.
"""

import argparse
import importlib
import os
import signal
import sys



from rclify import __version__, disk_space, interrupt

from rclify.errors import RclifyError

COMMANDS = ["transform", "revert", "flags", "profile", "assign", "report", "check", "bench", "run", "tune"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of `command` alone where it is one (a command's module is
    imported only for it: the others' imports were a quarter of a transform's start)."""
    parser = argparse.ArgumentParser(
        prog="rclify",
        description="Move a pthread program's locks onto Remote Core Locking and other fast locks.",
    )
    parser.add_argument("--version", action="version", version=f"rclify {__version__}")
    parser.add_argument("--print-completion", choices=("bash", "zsh"), action=_PrintCompletion,
                        help="print a bash or zsh completion script, generated from these options, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in [command] if command in COMMANDS else COMMANDS:
        module = importlib.import_module(f"rclify.commands.{name}")
        module.add_parser(sub).set_defaults(handler=module.run)
    return parser


class _PrintCompletion(argparse.Action):
    """Shell completion generated from the parser itself by shtab (a library, not a script kept by
    hand): it never lags behind an option.  Imported only here: no other command pays for it."""

    def __call__(self, parser, namespace, shell, option_string=None):
        import shtab

        print(shtab.complete(build_parser(), shell=shell))
        parser.exit()


def split_passthrough(argv: list[str]) -> tuple[list[str], list[str]]:
    """Arguments after a bare `--` go to the compiler (transform) or the program (profile)."""
    if "--" in argv:
        at = argv.index("--")
        return argv[:at], argv[at + 1 :]
    return argv, []


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own, passthrough = split_passthrough(argv)
    parser = build_parser(next((a for a in own if not a.startswith("-")), None))  # rclify [--version] COMMAND ...
    args = parser.parse_args(own)
    args.passthrough = passthrough
    handlers = {s: signal.getsignal(s) for s in interrupt.SIGNALS}
    scratch = interrupt.private_tempdir()
    try:
        interrupt.install()
        return int(args.handler(args) or 0)
    except RclifyError as err:
        print(f"rclify {args.command}: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt as err:
        signum = err.signum if isinstance(err, interrupt.Interrupted) else signal.SIGINT
        print(f"rclify {args.command}: interrupted ({signal.Signals(signum).name})", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:
        # stdout's reader stopped (`rclify transform . | head`): no traceback, and none at exit
        # either, when Python flushes stdout again (the recipe of Python's signal documentation)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as err:  # after BrokenPipeError, one of them
        if not disk_space.is_disk_full(err):
            raise
        print(f"rclify {args.command}: error: {disk_space.disk_full_line(err)}", file=sys.stderr)
        return 2
    finally:
        interrupt.remove_tempdir(scratch)
        for s, handler in handlers.items():
            if handler is not None:
                signal.signal(s, handler)
