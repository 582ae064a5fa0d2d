"""Fail when etc/watcher-cams/watcher-cams.conf.sample is not current.

Regenerate it with:
  oslo-config-generator \
      --config-file etc/watcher-cams/watcher-cams-config-generator.conf
"""

import difflib
import os
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATOR = os.path.join(TOP, 'etc', 'watcher-cams',
                         'watcher-cams-config-generator.conf')
SAMPLE = os.path.join(TOP, 'etc', 'watcher-cams', 'watcher-cams.conf.sample')


def main():
    with tempfile.TemporaryDirectory() as tmp:
        fresh = os.path.join(tmp, 'sample.conf')
        # The generator installed beside this interpreter (the venv's).
        generator = os.path.join(os.path.dirname(sys.executable),
                                 'oslo-config-generator')
        subprocess.run([generator, '--config-file', GENERATOR,
                        '--output-file', fresh], check=True)
        with open(fresh) as f:
            want = f.readlines()
    with open(SAMPLE) as f:
        have = f.readlines()
    if want != have:
        sys.stdout.writelines(difflib.unified_diff(
            have, want, 'committed sample', 'generated sample'))
        print('\n%s is stale; regenerate it (see %s).' % (SAMPLE, __file__))
        return 1
    print('sample config is current')
    return 0


if __name__ == '__main__':
    sys.exit(main())
