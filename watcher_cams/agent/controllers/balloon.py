"""Live balloon resizes, guarded, recorded and reversible.

Every request is checked again here, whoever sent it: never below the
guest's floor, never above its maximum, never more than one step, and
never growing the host beyond what it may promise (accounting.py). The
previous size is persisted before libvirt is asked, so a crash half-way
still leaves something to revert to.
"""

import time

import libvirt
from oslo_log import log

from watcher_cams.agent import controllers
from watcher_cams import changes
from watcher_cams.policy import guards

LOG = log.getLogger(__name__)
KIND = changes.BALLOON


class BalloonController:
    def __init__(self, state, cfg, timeout=60.0, tolerance_mb=4,
                 poll=0.2, clock=time.monotonic, sleep=time.sleep):
        self.state = state
        self.cfg = cfg
        self.timeout = timeout
        self.tolerance_mb = tolerance_mb
        self.poll = poll
        self.clock = clock
        self.sleep = sleep

    def check(self, guest, account, target_mb, step=True):
        """Raise Refused unless ``guest`` may be resized to ``target_mb``."""
        if type(target_mb) is not int:
            raise controllers.Refused('target_mb must be an integer, got %r'
                                      % (target_mb,))
        if target_mb > guest.max_mb:
            raise controllers.Refused(
                'target %d MiB is above the maximum %d MiB of %s'
                % (target_mb, guest.max_mb, guest.uuid))
        delta = target_mb - guest.actual_mb
        if delta < 0 and not guest.has_data:
            raise controllers.Refused(
                '%s has no trustworthy counters (%s): not shrinking it'
                % (guest.uuid, guest.problem or 'no sample'))
        floor = guards.floor_mb(guest, self.cfg)
        if delta < 0 and target_mb < floor:
            raise controllers.Refused(
                'target %d MiB is below the floor %d MiB of %s'
                % (target_mb, floor, guest.uuid))
        if step and abs(delta) > self.cfg.max_step_mb:
            raise controllers.Refused(
                'change of %d MiB exceeds max_step_mb %d'
                % (delta, self.cfg.max_step_mb))
        if not account.may_grow(delta):
            raise controllers.Refused(
                'growing %s by %d MiB exceeds what the host may promise '
                '(%d MiB left of %d MiB)' % (guest.uuid, delta,
                                             account.headroom_mb,
                                             account.capacity_mb))

    def resize(self, dom, target_mb):
        """Set the live size and wait for the guest; returns actual MiB."""
        self._start(dom, target_mb)
        return self._wait({dom.UUIDString(): (dom, target_mb)})[
            dom.UUIDString()]

    @staticmethod
    def _start(dom, target_mb):
        """Ask libvirt for the new size; the guest gets there later."""
        try:
            dom.setMemoryFlags(target_mb * 1024,
                               libvirt.VIR_DOMAIN_AFFECT_LIVE)
        except libvirt.libvirtError as exc:
            raise controllers.ChangeFailed(
                'libvirt refused to resize %s: %s' % (dom.UUIDString(), exc))

    def _wait(self, pending):
        """{uuid: actual MiB} once each of {uuid: (dom, target)} is there.

        All of them within one balloon_timeout: guests move their balloons
        at the same time.
        """
        deadline = self.clock() + self.timeout
        reached = {}
        while True:
            for uuid, (dom, target_mb) in list(pending.items()):
                actual = dom.info()[2] // 1024
                if abs(actual - target_mb) <= self.tolerance_mb:
                    reached[uuid] = actual
                    del pending[uuid]
            if not pending:
                return reached
            if self.clock() >= deadline:
                uuid, (dom, target_mb) = next(iter(pending.items()))
                raise controllers.ChangeFailed(
                    'balloon of %s reached %d MiB, not %d MiB, in %.0f s'
                    % (uuid, dom.info()[2] // 1024, target_mb, self.timeout))
            self.sleep(self.poll)

    def _record(self, guest, target_mb, reason, qemu_pid, change_id):
        """Keep what revert needs before the guest changes."""
        entry = self.state.get(guest.uuid, KIND) or {}
        earlier, ids = controllers.with_undo(
            entry, 'earlier_mb', 'previous_mb', guest.actual_mb, change_id)
        self.state.record(guest.uuid, KIND, {
            'target_mb': target_mb, 'previous_mb': guest.actual_mb,
            'earlier_mb': earlier, 'change_ids': ids,
            'original_mb': entry.get('original_mb', guest.actual_mb),
            'max_mb': guest.max_mb,
            'reason': str(reason)[:255], 'time': time.time(),
            'qemu_pid': qemu_pid})
        LOG.info('Balloon %s: %d -> %d MiB (%s)', guest.uuid,
                 guest.actual_mb, target_mb, reason)

    def set(self, dom, guest, account, target_mb, reason='', qemu_pid=None,
            change_id=None):
        self.check(guest, account, target_mb)
        self._record(guest, target_mb, reason, qemu_pid, change_id)
        actual = self.resize(dom, target_mb)
        return {'previous_mb': guest.actual_mb, 'actual_mb': actual}

    def set_many(self, found, targets, reason='', change_id=None):
        """Resize several guests of one collection: shrinks, then grows.

        ``found``: a monitor.Collection; ``targets``: dicts with
        ``instance``, ``target_mb`` and an optional ``reason``. The shrinks
        move together, then the grows together, each grow checked against
        what the shrinks freed: a host's plan takes about two balloon
        waits, not one per guest. A refused or failed change stops the
        batch once the changes already started have arrived (they are
        recorded under ``change_id``, for a revert to undo); guests gone
        since the plan are skipped.
        """
        present = [(t, found.domains[t['instance']]) for t in targets
                   if t['instance'] in found.domains]
        gone = [t['instance'] for t in targets
                if t['instance'] not in found.domains]
        if gone:
            LOG.info('Balloon batch %s: %d guests gone since the plan, '
                     'skipped: %s', change_id, len(gone), ', '.join(gone))
        account, changed = found.account, {}
        for grow in (False, True):
            group = [(t, d) for t, d in present
                     if (t['target_mb'] > found.view.guest(
                         t['instance']).actual_mb) == grow]
            account = self._set_group(found, group, account, changed,
                                      reason, change_id)
        return {'changed': changed, 'gone': gone}

    def _set_group(self, found, group, account, changed, reason, change_id):
        """Start each change of ``group``, then wait for all of them."""
        pending, before = {}, {}
        try:
            for target, domain in group:
                guest = found.view.guest(target['instance'])
                self.check(guest, account, target['target_mb'])
                self._record(guest, target['target_mb'],
                             target.get('reason') or reason,
                             domain.qemu_pid, change_id)
                self._start(domain.dom, target['target_mb'])
                pending[guest.uuid] = (domain.dom, target['target_mb'])
                before[guest.uuid] = guest.actual_mb
                account = account.resized(target['target_mb']
                                          - guest.actual_mb)
        finally:
            reached = self._wait(dict(pending))
            changed.update({u: {'previous_mb': before[u], 'actual_mb': mb}
                            for u, mb in reached.items()})
        return account

    def revert(self, dom, guest, account, qemu_pid=None, change_id=None):
        """Undo the newest change, or the one ``change_id`` names.

        A change the agent never recorded (refused, or its request lost)
        and one reverted already are answered ``not_applied``: nothing to
        undo, and nothing older is undone in its place.
        """
        entry = self.state.get(guest.uuid, KIND)
        if not controllers.check_newest(entry, 'earlier_mb', 'previous_mb',
                                        change_id):
            return controllers.not_applied(change_id)
        if not entry:
            raise controllers.Refused('no balloon change of %s to revert'
                                      % guest.uuid)
        # Reverts undo changes newest first, so a plan that resized one
        # guest twice is undone back to where it started; past the kept
        # history a revert goes back to the original size.
        earlier = controllers.undo_history(entry, 'earlier_mb', 'previous_mb')
        ids = controllers.change_ids(entry, 'earlier_mb', 'previous_mb')[:-1]
        target = earlier.pop() if earlier else entry['original_mb']
        # A revert may take back a whole step, but the floor and capacity
        # guards still hold.
        self.check(guest, account, target, step=False)
        LOG.warning('Balloon %s: reverting %d -> %d MiB', guest.uuid,
                    guest.actual_mb, target)
        actual = self.resize(dom, target)
        if not earlier and target == entry['original_mb']:
            self.state.forget(guest.uuid, KIND)
        else:
            entry.update(target_mb=target, earlier_mb=earlier,
                         change_ids=ids,
                         previous_mb=(earlier[-1] if earlier
                                      else entry['original_mb']),
                         reason='revert', time=time.time(),
                         qemu_pid=qemu_pid)
            self.state.record(guest.uuid, KIND, entry)
        return {'previous_mb': guest.actual_mb, 'actual_mb': actual}

    def revert_many(self, found, instances, change_id):
        """Undo change ``change_id`` of each guest, last listed first.

        Reverse order undoes grows before the shrinks that made room for
        them. One guest's refused or failed revert is in the answer and
        does not stop the others.
        """
        account, answers = found.account, {}
        for uuid in reversed(instances):
            domain = found.domains.get(uuid)
            if domain is None:
                answers[uuid] = controllers.not_applied(change_id)
                continue
            try:
                answer = self.revert(domain.dom, found.view.guest(uuid),
                                     account, domain.qemu_pid, change_id)
            except (controllers.Refused, controllers.ChangeFailed) as exc:
                LOG.error('Balloon %s: change %s not reverted: %s', uuid,
                          change_id, exc)
                answers[uuid] = {'error': str(exc)[:255]}
                continue
            if 'actual_mb' in answer:
                account = account.resized(answer['actual_mb']
                                          - answer['previous_mb'])
            answers[uuid] = answer
        return answers

    def restore(self, dom, uuid, max_mb):
        """Give the guest its full size back and forget its record."""
        LOG.warning('Balloon %s: restoring full size %d MiB', uuid, max_mb)
        actual = self.resize(dom, max_mb)
        self.state.forget(uuid, KIND)
        return actual
