"""``watcher-cams-lab simulate``: run scenarios, print, save, plot."""

import os
import time

from watcher_cams.lab import progress as progress_mod
from watcher_cams.lab import results as results_mod
from watcher_cams.lab.sim import plots
from watcher_cams.lab.sim import scenarios as scenarios_mod
from watcher_cams.lab.sim import targets as targets_mod
from watcher_cams.lab import tables


def simulate(scenarios, outdir, out, label, stream=None, jobs=1):
    """Run ``scenarios``; write results.json and plots into ``outdir``.

    ``jobs``: points of a memory scenario run at once, in that many
    processes. Returns the rows and the target checks.
    """
    os.makedirs(outdir, exist_ok=True)
    started = time.monotonic()
    bar = progress_mod.Progress(sum(s.units() for s in scenarios), stream)
    rows, meta, pngs = [], [], []
    for s in scenarios:
        t0 = time.monotonic()
        s_rows = s.run(bar, jobs)
        seconds = time.monotonic() - t0
        rows += s_rows
        meta.append({'name': s.name, 'title': s.title, 'scale': s.scale,
                     'paper': s.paper_text, 'seconds': round(seconds, 1),
                     'strategies': list(s.strategies)})
        out('\n== %s: %s  (%.1f s)' % (s.name, s.title, seconds))
        out('paper: %s' % s.paper_text)
        out('scale: %s' % s.scale)
        headers, table_rows = s.summary(s_rows)
        out(tables.table(headers, table_rows))
        pngs.append(plots.reads_bars(s.name, s_rows, outdir))
        runs = getattr(s, 'runs', {})
        if runs:
            first = next(iter(runs))
            pngs.append(plots.timeline(s.name, first, runs[first], outdir))
        if isinstance(s, scenarios_mod.CamsScenario):
            pngs.append(plots.cams_improvement(s_rows, outdir, s.name))
    total = time.monotonic() - started
    checks = targets_mod.check(rows, {label: total})
    if checks:
        out('\n== targets')
        out(tables.checks(checks))
    path = results_mod.write(outdir, {
        'run': label, 'seconds': round(total, 1), 'scenarios': meta,
        'rows': rows}, checks)
    out('\nwrote %s and %d plots in %s (%.1f s)' % (
        os.path.basename(path), len([p for p in pngs if p]), outdir, total))
    return rows, checks
