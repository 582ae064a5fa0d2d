"""The openstack CLI as a long-lived process: one command per input line.

Run by the test bed's venv python. Each ``openstack`` process spends about
two seconds of CPU importing the client and its plugins before it sends a
request; the cloud tests poll Watcher and Nova hundreds of times, on two
cores the cloud's services also need. Here the imports happen once and
each command runs in a fresh ``OpenStackShell``, as the CLI would.

Protocol: a JSON list of arguments per line in; a JSON object
``{"rc": int, "out": str, "err": str}`` per line out. Credentials come from
the environment, as for the CLI.
"""

import contextlib
import io
import json
import logging
import sys

from openstackclient import shell


def run(argv):
    """Exit code, stdout and stderr of ``openstack argv``."""
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = shell.OpenStackShell().run(argv)
            except SystemExit as exc:  # argparse on bad arguments
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        # Each shell adds its own log handlers, bound to this call's
        # streams.
        root.handlers[:] = handlers
        root.setLevel(level)
    return {'rc': code, 'out': out.getvalue(), 'err': err.getvalue()}


def main():
    sys.argv[0] = 'openstack'  # cliff names the program in its messages
    for line in sys.stdin:
        sys.stdout.write(json.dumps(run(json.loads(line))) + '\n')
        sys.stdout.flush()


if __name__ == '__main__':
    main()
