"""Progress of long lab runs on the terminal (stderr).

Not tqdm: it is not in the pinned dependency tree (constraints.txt), and a
CI log wants one plain line per step, which this writes when the stream
is not a terminal; thirty lines do not justify a new dependency.
"""

import sys
import time


class Progress:
    """A progress bar: ``[#####-----] 12/40  12s  what``.

    One line rewritten in place on a terminal; a line per step otherwise
    (CI logs).
    """

    WIDTH = 24

    def __init__(self, total, stream=None):
        self.total = max(1, total)
        self.done = 0
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.tty = hasattr(self.stream, 'isatty') and self.stream.isatty()

    def step(self, what):
        self.done += 1
        # A step count known only roughly (e.g. waiting for guests) may
        # overrun its estimate: the bar stays full meanwhile.
        self.total = max(self.total, self.done)
        filled = self.WIDTH * self.done // self.total
        line = '[%s%s] %d/%d %4ds  %s' % (
            '#' * filled, '-' * (self.WIDTH - filled), self.done, self.total,
            time.monotonic() - self.start, what)
        if self.tty:
            self.stream.write('\r' + line[:120].ljust(120))
            if self.done >= self.total:
                self.stream.write('\n')
        else:
            self.stream.write(line + '\n')
        self.stream.flush()
