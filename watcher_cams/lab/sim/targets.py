"""The figures the lab issue asks for, checked on result rows.

Each check returns ``(name, passed, detail)``; checks whose scenario did not
run are left out.
"""

from watcher_cams.lab.sim import experiment
from watcher_cams.lab.sim import forged_claims

TOLERANCE_ORACLE = 1.05
# Share of the default mode's gain its guests keep without a guest agent.
AGENTLESS_SHARE = 0.7
vm1 = experiment.vm1_io_reduction


def cams_checks(rows, scenario):
    by = experiment.by_point(rows, scenario)
    points = sorted({p for p, _ in by},
                    key=lambda p: tuple(int(x[1:] if x[0] == 'r' else x[:-1])
                                        for x in p.split('-')))
    if not points:
        return []
    checks = []
    worse, above_static, far = _cams_misses(by, points)
    checks.append(('%s: utility reads no more from disk than CAMS at any '
                   'point' % scenario, not worse,
                   'worse at ' + ', '.join(worse) if worse else
                   '%d points' % len(points)))
    checks.append(('%s: utility reads no more from disk than static at any '
                   'point' % scenario, not above_static,
                   'worse at ' + ', '.join(above_static) if above_static
                   else '%d points' % len(points)))
    checks.append(('%s: utility within 5%% of the oracle at every point'
                   % scenario, not far,
                   'beyond at ' + ', '.join(far) if far else
                   '%d points' % len(points)))

    def improvement(p):
        sms = vm1(by[(p, 'sms')])
        return vm1(by[(p, 'cams-paper')]) / sms if sms > 0 else float('inf')

    ratios = sorted({int(p.split('-')[0][1:]) for p in points})
    ranges = sorted({int(p.split('-')[1][:-1]) for p in points})
    top_range, top_ratio = ranges[-1], ratios[-1]
    if len(ratios) > 1 and len(ranges) > 1:
        by_ratio = [improvement('r%d-%dg' % (r, top_range)) for r in ratios
                    if ('r%d-%dg' % (r, top_range), 'sms') in by]
        by_range = [improvement('r%d-%dg' % (top_ratio, g)) for g in ranges
                    if ('r%d-%dg' % (top_ratio, g), 'sms') in by]
        ok = (by_ratio[-1] > by_ratio[0] and by_range[-1] > by_range[0])
        checks.append((
            '%s: CAMS gain over SMS grows with the rate ratio and the range'
            % scenario, ok,
            'by ratio at %d GB: %s; by range at ratio %d: %s' % (
                top_range, ' '.join('%.1fx' % v for v in by_ratio),
                top_ratio, ' '.join('%.1fx' % v for v in by_range))))
    return checks


def _cams_misses(by, points):
    """(above paper mode, above static, beyond the oracle's tolerance).

    Each a list of the CAMS grid's points where utility read that much
    more, with by how much.
    """
    worse, above_static, far = [], [], []
    for p in points:
        u, c, o = by[(p, 'utility')], by[(p, 'cams-paper')], by[(p, 'oracle')]
        if u['disk_read_bytes'] > c['disk_read_bytes']:
            worse.append('%s (+%.3f%%)' % (p, 100 * (
                u['disk_read_bytes'] / c['disk_read_bytes'] - 1)))
        st = by.get((p, 'static'))
        if st and u['disk_read_bytes'] > st['disk_read_bytes']:
            above_static.append('%s (+%.2f%%)' % (p, 100 * (
                u['disk_read_bytes'] / st['disk_read_bytes'] - 1)))
        ratio = u['disk_read_bytes'] / o['disk_read_bytes']
        if ratio > TOLERANCE_ORACLE:
            far.append('%s (%.3f)' % (p, ratio))
    return worse, above_static, far


def margin_checks(rows, scenario='balloon-controller'):
    by = experiment.by_point(rows, scenario)
    if not by:
        return []

    def speed(p, s):
        return by[(p, 'static')]['read_time_s'] / by[(p, s)]['read_time_s']

    files = sorted({int(p[:-5]) for p, _ in by})
    mid = ['%dfiles' % n for n in files if 1500 <= n <= 3000]
    low = ['%dfiles' % n for n in files if n < 1500]
    checks = []
    if mid:
        # The paper's shape: a gain over the whole 1,500-3,000 MB range that
        # fades for larger working sets. Its 9.5x comes from closed-loop
        # readers on a hard disk; under the simulator's read-time model no
        # split of memory beats the oracle, printed alongside.
        gains = [speed(p, 'margin-paper') for p in mid]
        high = [speed('%dfiles' % n, 'margin-paper')
                for n in files if n >= 4000]
        ok = min(gains) > 1.1 and all(max(gains) > g for g in high)
        checks.append((
            '%s: margin reproduction gains for 1,500-3,000 MB working sets'
            ', fading above' % scenario, ok, ' '.join(
                '%s %.2fx%s' % (p, g, ' (oracle %.2fx)' % speed(p, 'oracle')
                                if (p, 'oracle') in by else '')
                for p, g in zip(mid, gains))
            + '; above: %s' % ' '.join('%.2fx' % g for g in high)))
    if low:
        ours = [speed(p, 'utility') for p in low]
        paper = [speed(p, 'margin-paper') for p in low]
        # The reproduction shows the paper's loss; ours must not have it.
        checks.append(('%s: margin reproduction loses below 1,500 MB, our '
                       'mode does not' % scenario,
                       min(ours) >= 0.99 and max(paper) < 1.0,
                       'utility %s; margin-paper %s' % (
                           ' '.join('%.2fx' % v for v in ours),
                           ' '.join('%.2fx' % v for v in paper))))
    return checks


def real_lab_checks(rows, scenario='real-lab'):
    """The real-guest lab's target on its simulated copy (90% point)."""
    by = experiment.by_point(rows, scenario)
    if ('90%', 'static') not in by:
        return []
    miss = {s: experiment.hotcold_miss(by[('90%', s)])
            for s in ('static', 'cams-paper', 'utility', 'oracle')
            if ('90%', s) in by}
    factors = {s: miss['static'] / m if m else float('inf')
               for s, m in miss.items()}
    return [('real-lab: the hot/cold guest reads >= 2x less than static '
             '(utility, 90% hot share)', factors.get('utility', 0) >= 2.0,
             ', '.join('%s %.2fx' % (s, f) for s, f in factors.items()
                       if s != 'static'))]


# Each allocator check: its name, the strategy utility is held against,
# and the figure compared.
ALLOCATOR_TARGETS = (
    ('reads at most 1.05x the oracle', 'oracle', 'disk_read_bytes',
     TOLERANCE_ORACLE),
    ('reads no more than paper mode', 'cams-paper', 'disk_read_bytes', 1.0),
    ('reads no more than static', 'static', 'disk_read_bytes', 1.0),
    ('moves no more memory than paper mode', 'cams-paper', 'moved_mb', 1.0))


def allocator_checks(rows, scenario='allocator'):
    """Issue 23's figures for the default mode on every allocator point.

    Only those whose strategies ran (``simulate --strategies``).
    """
    by = experiment.by_point(rows, scenario)
    points = sorted({p for p, s in by if s == 'utility'})
    ran = {s for _, s in by}
    out = []
    for name, other, key, factor in ALLOCATOR_TARGETS:
        if not points or other not in ran:
            continue
        bad = []
        for p in points:
            mine, theirs = by[(p, 'utility')][key], by[(p, other)][key]
            if mine > factor * theirs:
                ratio = mine / max(1, theirs)
                bad.append((-ratio, '%s (%.3f)' % (p, ratio)))
        out.append(('%s: utility %s at every point' % (scenario, name),
                    not bad, _missed(bad, len(points)) if bad
                    else '%d points' % len(points)))
    return out


# Misses a check's detail names, the worst first, where there are more.
MISSES_NAMED = 10


def _missed(bad, points):
    """'missed at p (figure), ...' for [(badness, 'p (figure)')].

    In the points' order; beyond MISSES_NAMED of them (a sweep over
    hundreds of random hosts), how many, and the worst (lowest badness).
    """
    if len(bad) <= MISSES_NAMED:
        return 'missed at ' + ', '.join(text for _, text in bad)
    worst = sorted(bad, key=lambda b: b[0])[:MISSES_NAMED]
    return 'missed at %d of %d points; the worst: %s' % (
        len(bad), points, ', '.join(text for _, text in worst))


def agentless_checks(rows, scenario='agentless'):
    """Guests without an agent keep >= 70% of the default mode's gain."""
    by = experiment.by_point(rows, scenario)
    points = sorted({p for p, _ in by
                     if not p.endswith(experiment.NO_AGENT)})
    if not points:
        return []
    kept = {p: experiment.gain_kept(*experiment.agentless_reads(by, p))
            for p in points}
    missed = [(k, '%s (%.0f%%)' % (p, k)) for p, k in kept.items()
              if k is not None and k < AGENTLESS_SHARE * 100]
    return [('%s: utility without guest agents keeps >= %.0f%% of its gain '
             'at every point' % (scenario, AGENTLESS_SHARE * 100),
             not missed, _missed(missed, len(points)) if missed else
             ', '.join('%s %s' % (p, '-' if k is None else '%.0f%%' % k)
                       for p, k in kept.items()))]


def forged_checks(rows, scenario='forged-claims'):
    """A forger's neighbours read no more, and it holds no more memory."""
    by = experiment.by_point(rows, scenario)
    points = sorted({p for p, _ in by
                     if not p.endswith(forged_claims.FORGED)})
    if not points:
        return []
    name = forged_claims.forger(forged_claims.spec(1, False))
    figs = {p: forged_claims.figures(by, p, name) for p in points}
    bad = [(-f[1] / max(f[0], 1e-9), '%s (%.2f against %.2f GiB, %.0f '
            'against %.0f MiB)' % (p, f[1], f[0], f[3], f[2]))
           for p, f in figs.items() if forged_claims.missed(f)]
    return [('%s: with its counters forged, a stream\'s neighbours read at '
             'most %.0f%% more and it holds at most %d MiB more at every '
             'point' % (scenario, forged_claims.NEIGHBOUR_SHARE * 100,
                        forged_claims.FORGER_SLACK_MB),
             not bad, _missed(bad, len(points)) if bad else
             '%d points' % len(points))]


def check(rows, timings):
    """Every applicable check; ``timings`` maps a run name to seconds."""
    scenarios = {r['scenario'] for r in rows}
    out = []
    for name in ('cams', 'cams-grid'):
        if name in scenarios:
            out += cams_checks(rows, name)
    out += margin_checks(rows)
    out += real_lab_checks(rows)
    out += allocator_checks(rows)
    out += allocator_checks(rows, 'random-hosts')
    out += allocator_checks(rows, 'wide-hosts')
    out += agentless_checks(rows)
    out += forged_checks(rows)
    limits = {'default': 60, 'paper-grid': 600}
    for name, seconds in timings.items():
        if name in limits:
            out.append(('%s runs in under %d s' % (name, limits[name]),
                        seconds < limits[name], '%.1f s' % seconds))
    return out
