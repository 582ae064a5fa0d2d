"""Each failed test of a subunit stream (stdin): its id and traceback's end.

tools/test.sh prints this just before its summary line, so that the cause
of a failure is in the last lines of a long CI log and not only in the
middle of a suite's output.
"""

import sys

import subunit
import testtools

LINES = 12
WIDTH = 240


def _failure(test):
    if test['status'] not in ('fail', 'uxsuccess'):
        return
    details = test['details']
    text = details['traceback'].as_text() if 'traceback' in details else ''
    tail = [line[:WIDTH] for line in text.rstrip().splitlines()[-LINES:]]
    print('FAILED %s' % test['id'])
    for line in tail:
        print('    ' + line)


def main():
    stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer,
                                              non_subunit_name='stdout')
    result = testtools.StreamToDict(_failure)
    result.startTestRun()
    try:
        stream.run(result)
    finally:
        result.stopTestRun()


if __name__ == '__main__':
    main()
