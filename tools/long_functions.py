#!/usr/bin/env python3
"""List the project's functions longer than a limit (default 50 lines).

Usage: tools/long_functions.py [--limit N] [DIR ...]
(default: every package, the tests and tools). A function that stays
long says why in a comment or its docstring (a data literal, say).
"""

import argparse
import ast
import pathlib

TOP = pathlib.Path(__file__).resolve().parent.parent
DIRS = ('watcher_cams', 'nova_driver_ext', 'watcher_cams_dashboard',
        'watcher_cams_tempest_plugin', 'tools', 'tests')


def long_functions(paths, limit):
    """[(lines, 'path:line name')] over ``limit``, the longest first."""
    found = []
    for root in paths:
        for path in sorted(pathlib.Path(root).rglob('*.py')):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > limit:
                        found.append((lines, '%s:%d %s' % (
                            path, node.lineno, node.name)))
    return sorted(found, reverse=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--limit', type=int, default=50)
    parser.add_argument('dirs', nargs='*')
    args = parser.parse_args()
    dirs = args.dirs or [TOP / d for d in DIRS]
    for lines, where in long_functions(dirs, args.limit):
        print('%4d  %s' % (lines, where))


if __name__ == '__main__':
    main()
