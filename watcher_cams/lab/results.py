"""results.json of a lab run."""

import json
import os


def write(outdir, results, checks):
    """Write ``results`` plus the target ``checks``; returns the path."""
    results = dict(results, targets=[
        {'check': n, 'passed': ok, 'detail': d} for n, ok, d in checks])
    path = os.path.join(outdir, 'results.json')
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(results, f, indent=1, sort_keys=True)
    return path
