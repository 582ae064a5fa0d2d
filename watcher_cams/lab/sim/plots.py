"""PNG plots of the lab's results (matplotlib, no display needed)."""

import os

import matplotlib

matplotlib.use('Agg')
from matplotlib import pyplot  # noqa: E402

from watcher_cams.lab.sim import experiment  # noqa: E402

KB = 1024


def _save(fig, outdir, name):
    path = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    pyplot.close(fig)
    return path


def reads_bars(scenario, rows, outdir):
    """Disk reads of each strategy at each point (GiB)."""
    points = list(dict.fromkeys(r['point'] for r in rows))
    strategies = list(dict.fromkeys(r['strategy'] for r in rows))
    by = experiment.by_point(rows)
    fig, ax = pyplot.subplots(figsize=(max(6, 1.2 * len(points) + 3), 4))
    width = 0.8 / len(strategies)
    for i, s in enumerate(strategies):
        values = [by[(p, s)]['disk_read_bytes'] / KB ** 3
                  if (p, s) in by else 0 for p in points]
        ax.bar([x + i * width for x in range(len(points))], values, width,
               label=s)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(points))])
    ax.set_xticklabels(points, rotation=30, ha='right')
    ax.set_ylabel('disk reads (GiB)')
    ax.set_title('%s: bytes read from disk (lower is better)' % scenario)
    ax.legend(fontsize='small', ncol=2)
    return _save(fig, outdir, '%s-disk-reads.png' % scenario)


def timeline(scenario, point, runs, outdir, key='size_mb',
             what='guest memory over time', suffix='memory'):
    """Per-guest series ``key`` (MiB) over time under each strategy."""
    labels = [s for s in runs if runs[s].series]
    if not labels:
        return None
    fig, axes = pyplot.subplots(len(labels), 1, sharex=True,
                                figsize=(7, 1.8 * len(labels) + 0.6))
    if len(labels) == 1:
        axes = [axes]
    for ax, label in zip(axes, labels):
        series = runs[label].series
        t = [c['t'] / 60 for c in series]
        for name in series[0][key]:
            ax.plot(t, [float('nan') if c[key][name] is None
                        else c[key][name] for c in series], label=name)
        ax.set_ylabel('MiB')
        ax.set_title(label, fontsize='small', loc='left')
    axes[0].legend(fontsize='small', loc='upper right')
    axes[-1].set_xlabel('minutes')
    fig.suptitle('%s %s: %s' % (scenario, point, what))
    return _save(fig, outdir, '%s-%s-%s.png' % (scenario, point, suffix))


def hit_ratio_timeline(series, outdir):
    """Host cache hit ratio per window: {label: [(reads done, ratio)]}."""
    fig, ax = pyplot.subplots(figsize=(7, 3.5))
    for label, points in series.items():
        ax.plot([x for x, _ in points], [100 * y for _, y in points],
                label=label)
    ax.set_xlabel('reads done (1 MiB each)')
    ax.set_ylabel('host cache hit ratio (%)')
    ax.set_ylim(-5, 105)
    ax.set_title('Double caching on a real guest: what the host cache '
                 'serves')
    ax.legend(fontsize='small')
    return _save(fig, outdir, 'double-caching-host-hits.png')


def cams_improvement(rows, outdir, name):
    """VM1 IO reduction improvement over SMS by rate ratio, per range."""
    by = experiment.by_point(rows)
    points = {}
    for r in rows:
        ratio, rng = r['point'].split('-')
        points.setdefault(rng, []).append((int(ratio[1:]), r['point']))
    fig, ax = pyplot.subplots(figsize=(7, 4.5))
    ranges = sorted(points.items(), key=lambda kv: int(kv[0][:-1]))
    # One colour per range, one line style per strategy: more series than
    # the default colour cycle holds.
    colours = pyplot.cm.viridis([i / max(1, len(ranges) - 1) * 0.9
                                 for i in range(len(ranges))])
    for (rng, pts), colour in zip(ranges, colours):
        pts = sorted(set(pts))
        for strategy, style in (('cams-paper', '-o'), ('utility', '--s')):
            xs, ys = [], []
            for ratio, label in pts:
                sms = experiment.vm1_io_reduction(by[(label, 'sms')])
                v = experiment.vm1_io_reduction(by[(label, strategy)])
                if sms > 0:
                    xs.append(ratio)
                    ys.append(v / sms)
            ax.plot(xs, ys, style, color=colour,
                    label='%s %s' % (strategy, rng))
    ax.plot([1, 8], [1.0, 5.8], 'k:', marker='x', label='paper, 80 GB')
    ax.set_xlabel('VM2/VM1 access rate ratio')
    ax.set_ylabel('VM1 IO reduction / SMS')
    ax.set_title('CAMS: improvement over SMS')
    ax.legend(fontsize='x-small', ncol=2)
    return _save(fig, outdir, '%s-improvement.png' % name)


def audit_times(rows, instances, outdir):
    """bench-cloud: one audit's seconds (RPC, engine, agents) by nodes."""
    fig, ax = pyplot.subplots(figsize=(7, 4))
    for absent, style in ((False, '-'), (True, '--')):
        chosen = [r for r in rows if bool(r.absent) == absent]
        if not chosen:
            continue
        nodes = [r.nodes for r in chosen]
        label = ' (%s absent)' % '/'.join(
            str(r.absent) for r in chosen) if absent else ''
        ax.plot(nodes, [r.audit_s for r in chosen], 'o' + style,
                label='audit' + label)
        ax.plot(nodes, [r.rpc_s for r in chosen], 's' + style,
                label='in RPC' + label)
        ax.plot(nodes, [r.engine_s for r in chosen], '^' + style,
                label='decision engine' + label)
        if not absent and any(r.agent_plan_s for r in chosen):
            ax.plot(nodes, [r.agent_plan_s for r in chosen], 'v:',
                    label='slowest agent planning its host')
    ax.axhline(30.0, color='grey', linewidth=0.8, label='target 30 s')
    ax.set_xlabel('compute nodes (%d instances each)' % instances)
    ax.set_ylabel('seconds per audit')
    ax.set_title('One audit over simulated agents on a real RabbitMQ')
    ax.legend(fontsize='small')
    return _save(fig, outdir, 'bench-cloud-audit-seconds.png')


def compare_changes(summaries, path):
    """Each point's change in reads between two runs, sorted (compare)."""
    fig, ax = pyplot.subplots(figsize=(7, 4))
    for s in summaries:
        ax.plot(range(1, len(s.changes) + 1), [c[0] for c in s.changes],
                label='%s (%+.1f GiB)' % (s.scenario, s.new_gib - s.base_gib))
    ax.axhline(0, color='grey', linewidth=0.8)
    ax.set_xlabel('points, most gained first')
    ax.set_ylabel('GiB read after less before')
    ax.set_title('change in bytes read from disk (below 0 is better)')
    ax.legend(fontsize='small')
    return _save(fig, os.path.dirname(path), os.path.basename(path))
