"""A picture of the Grafana dashboard, drawn from a real Prometheus.

Grafana is not packaged for these machines; this draws each panel of
``etc/watcher-cams/grafana/watcher-cams.json`` where the dashboard puts it
(its 24-column grid), from the panel's own queries run against a
Prometheus: stats as numbers, time series as lines over the last
``minutes``, tables as text. For the documentation's picture
(doc/source/prometheus.rst), and to check a dashboard change by eye.
"""

import re
import time

from watcher_cams.lab import prometheus

LEGEND = re.compile(r'{{\s*(\w+)\s*}}')
SCALE = {'bytes': (2 ** 20, 'MiB'), 'Bps': (2 ** 20, 'MiB/s'),
         's': (1, 's'), 'none': (1, '')}


def _legend(fmt, labels):
    text = LEGEND.sub(lambda m: labels.get(m.group(1), ''), fmt or '')
    return text[:24] or ','.join('%s=%s' % kv for kv in sorted(
        labels.items()) if kv[0] not in ('__name__', 'job', 'instance'))


def _scaled(panel):
    return SCALE.get(panel['fieldConfig']['defaults'].get('unit'), (1, ''))


def _series(prom, panel, host, minutes):
    """[(legend, times, values)] of a time-series panel's targets."""
    end = time.time()
    start = end - minutes * 60
    step = max(5, minutes * 60 // 240)
    divisor, _ = _scaled(panel)
    lines = []
    for target in panel['targets']:
        for found in prom.query_range(prometheus.expression(target, host),
                                      start, end, step):
            times = [(float(t) - end) / 60 for t, _ in found['values']]
            values = [float(v) / divisor for _, v in found['values']]
            lines.append((_legend(target.get('legendFormat'),
                                  found['metric']), times, values))
    return lines


def _now(prom, panel, host):
    """[(legend, value)] of a stat or table panel's targets now."""
    rows = []
    for target in panel['targets']:
        for found in prom.query(prometheus.expression(target, host)):
            rows.append((_legend(target.get('legendFormat'),
                                 found['metric']), float(found['value'][1])))
    return rows


def _draw(ax, prom, panel, host, minutes):
    divisor, unit = _scaled(panel)
    ax.set_title(panel['title'], fontsize=8, loc='left')
    if panel['type'] == 'timeseries':
        for legend, times, values in _series(prom, panel, host, minutes):
            ax.plot(times, values, label=legend, linewidth=1)
        ax.set_xlabel('minutes ago', fontsize=6)
        ax.set_ylabel(unit, fontsize=6)
        ax.tick_params(labelsize=6)
        if ax.lines:
            ax.legend(fontsize=5, loc='upper left')
        return
    ax.axis('off')
    rows = _now(prom, panel, host)
    text = '\n'.join('%s: %.4g %s' % (legend, value / divisor, unit)
                     for legend, value in rows[:8]) or 'no data'
    ax.text(0.02, 0.9, text, va='top', fontsize=7 if panel['type'] ==
            'table' else 10, transform=ax.transAxes, family='monospace')


def render(prom_url, host, out, minutes=30):
    """Draw the dashboard for ``host`` into the PNG ``out``."""
    import matplotlib  # the 'lab' extra
    matplotlib.use('Agg')
    from matplotlib import gridspec
    from matplotlib import pyplot

    prom = prometheus.Prometheus(url=prom_url)
    panels = [p for p in prometheus.load_dashboard()['panels']
              if p['type'] != 'row']
    height = max(p['gridPos']['y'] + p['gridPos']['h'] for p in panels)
    fig = pyplot.figure(figsize=(16, height * 0.5))
    grid = gridspec.GridSpec(height, 24, figure=fig, hspace=4, wspace=2.5,
                             left=0.05, right=0.98, top=0.95, bottom=0.04)
    for panel in panels:
        pos = panel['gridPos']
        ax = fig.add_subplot(grid[pos['y']:pos['y'] + pos['h'],
                                  pos['x']:pos['x'] + pos['w']])
        _draw(ax, prom, panel, host, minutes)
    fig.suptitle('watcher-cams (host %s, last %d minutes)' % (host,
                                                              minutes))
    fig.savefig(out, dpi=90)
    pyplot.close(fig)
    return out
