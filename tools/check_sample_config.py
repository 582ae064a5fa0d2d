"""Fail when a sample config or policy in etc/watcher-cams/ is not current.

Each etc/watcher-cams/*-config-generator.conf names its output_file; that
file must equal what oslo-config-generator produces now; the same for
*-policy-generator.conf and oslopolicy-sample-generator. Regenerate with
`tox -e genconfig`, or the generator's --config-file on each of them.
"""

import configparser
import difflib
import glob
import os
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ETC = os.path.join(TOP, 'etc', 'watcher-cams')


def check(generator_conf, tmp, tool='oslo-config-generator'):
    parser = configparser.ConfigParser(strict=False)
    parser.read(generator_conf)
    sample = os.path.join(TOP, parser['DEFAULT']['output_file'])
    fresh = os.path.join(tmp, os.path.basename(sample))
    # The generator installed beside this interpreter (the venv's).
    generator = os.path.join(os.path.dirname(sys.executable), tool)
    subprocess.run([generator, '--config-file', generator_conf,
                    '--output-file', fresh], check=True, cwd=TOP)
    with open(fresh) as f:
        want = f.readlines()
    with open(sample) as f:
        have = f.readlines()
    if want != have:
        sys.stdout.writelines(difflib.unified_diff(
            have, want, 'committed sample', 'generated sample'))
        print('\n%s is stale; regenerate it (see %s).' % (sample, __file__))
        return False
    print('%s is current' % os.path.relpath(sample, TOP))
    return True


def main():
    confs = sorted(glob.glob(os.path.join(ETC, '*-config-generator.conf')))
    policies = sorted(glob.glob(os.path.join(ETC, '*-policy-generator.conf')))
    with tempfile.TemporaryDirectory() as tmp:
        results = [check(c, tmp) for c in confs]
        results += [check(c, tmp, 'oslopolicy-sample-generator')
                    for c in policies]
    return 0 if results and all(results) else 1


if __name__ == '__main__':
    sys.exit(main())
