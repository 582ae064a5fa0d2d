"""Threads reading and updating Watcher actions in bench-apply's database.

Prints how many updates went through and how many failed, and why: the
check behind bench_apply._wal_kept (SQLite's "database is locked" when a
session's connection was the last one open).

    .venv/bin/python tools/bench_db_stress.py [SECONDS] [THREADS]
"""

import sys
import threading
import time

from watcher.common import utils
from watcher import objects

from watcher_cams.lab import bench_apply


def _actions(ctx, audit, count):
    """(plan, [action uuid]) of count pending actions."""
    plan = objects.ActionPlan(ctx, uuid=utils.generate_uuid(),
                              audit_id=audit.id,
                              strategy_id=audit.strategy_id,
                              state='ONGOING')
    plan.create()
    uuids = []
    for _ in range(count):
        action = objects.Action(ctx, uuid=utils.generate_uuid(),
                                action_plan_id=plan.id, action_type='nop',
                                input_parameters={}, state='PENDING',
                                parents=[])
        action.create()
        uuids.append(action.uuid)
    return plan, uuids


def _update_until(ctx, plan, uuid, deadline, updates, errors):
    """Read the plan and one action, update it, list the plan: a worker."""
    while time.monotonic() < deadline:
        try:
            action = objects.Action.get_by_uuid(ctx, uuid, eager=True)
            objects.ActionPlan.get_by_id(ctx, plan.id)
            action.status_message = str(time.monotonic())
            action.save()
            updates.append(uuid)
            objects.Action.list(ctx,
                                filters={'action_plan_uuid': plan.uuid})
        except Exception as exc:  # counted and shown: what this measures
            errors.append('%s: %s' % (type(exc).__name__,
                                      str(exc).split('\n')[0]))


def main(seconds=60.0, threads=8):
    updates, errors = [], []
    with bench_apply.watcher_database() as (ctx, audit):
        plan, uuids = _actions(ctx, audit, threads)
        deadline = time.monotonic() + seconds
        workers = [threading.Thread(target=_update_until, args=(
            ctx, plan, uuid, deadline, updates, errors)) for uuid in uuids]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    print('%d threads, %.0f s: %d updates, %d failed %s'
          % (threads, seconds, len(updates), len(errors),
             sorted(set(errors))))
    return 1 if errors else 0


if __name__ == '__main__':
    ARGS = sys.argv[1:] + ['60', '8'][len(sys.argv[1:]):]
    sys.exit(main(float(ARGS[0]), int(ARGS[1])))
