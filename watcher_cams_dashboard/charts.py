"""Small line charts as inline SVG, drawn on the server.

No JavaScript library: the page shows them as rendered, a screenshot
includes them, and a test can read their points.
"""

from django.utils.html import escape
from django.utils.safestring import mark_safe

WIDTH, PLOT, PAD, LEGEND_ROW = 440, 110, 36, 12
COLOURS = ('#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd',
           '#8c564b', '#e377c2', '#7f7f7f')


def _scale(lo, hi, a, b):
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) * (b - a) / span


def line_chart(title, unit, series):
    """An SVG chart of ``series``: {label: [(t, value)]}.

    Values that are None are left out, and lines without any. Returns
    safe markup, or '' when the points do not span any time.
    """
    series = {label: [(t, v) for t, v in line if v is not None]
              for label, line in series.items()}
    series = {label: line for label, line in series.items() if line}
    points = [p for line in series.values() for p in line]
    t0 = min((t for t, _ in points), default=0)
    t1 = max((t for t, _ in points), default=0)
    if t1 <= t0:
        return ''
    top = max(v for _, v in points) or 1.0
    base = PLOT + 18
    height = base + 8 + LEGEND_ROW * ((len(series) + 2) // 3)
    x = _scale(t0, t1, PAD, WIDTH - 8)
    y = _scale(0.0, top, base, 18)
    parts = ['<svg class="cams-chart" xmlns="http://www.w3.org/2000/svg" '
             'width="%d" height="%d" role="img" aria-label="%s">'
             % (WIDTH, height, escape(title)),
             '<text x="%d" y="12" font-size="11">%s (%s), last %.0f s'
             '</text>' % (PAD, escape(title), escape(unit), t1 - t0),
             '<text x="2" y="%.0f" font-size="9">%.4g</text>'
             % (y(top) + 3, top),
             '<text x="2" y="%d" font-size="9">0</text>' % (base + 3),
             '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>'
             % (PAD, base, WIDTH - 8, base)]
    for n, (label, line) in enumerate(sorted(series.items())):
        colour = COLOURS[n % len(COLOURS)]
        drawn = ' '.join('%.1f,%.1f' % (x(t), y(v)) for t, v in line)
        parts.append('<polyline fill="none" stroke="%s" stroke-width="1.5" '
                     'points="%s" data-label="%s"/>'
                     % (colour, drawn, escape(label)))
        parts.append('<text x="%d" y="%d" font-size="9" fill="%s">%s</text>'
                     % (PAD + 135 * (n % 3),
                        base + 14 + LEGEND_ROW * (n // 3), colour,
                        escape(label[:26])))
    parts.append('</svg>')
    return mark_safe(''.join(parts))
