"""Plain-text tables for the lab's output.

Not prettytable (which Watcher's dependencies bring): its closest style
rules the header as one unbroken line and pads the last column, and this
layout (two spaces between columns, a rule under each header) is what the
docs quote and what the lab's output has always been; the simulator's
output must stay byte-identical for its users' diffs. Eleven lines.
"""


def table(headers, rows):
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    line = '  '.join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, '  '.join('-' * w for w in widths)]
    out += ['  '.join(c.ljust(w) for c, w in zip(r, widths)) for r in cells]
    return '\n'.join(out)


def checks(found):
    """The PASS/FAIL table of (check, passed, detail) targets."""
    return table(('check', 'result', 'detail'),
                 [(n, 'PASS' if ok else 'FAIL', d) for n, ok, d in found])
