"""Controllers: each applies, records and reverts one kind of change."""


class Refused(ValueError):
    """A request the guards or the agent's settings do not allow."""


class ChangeFailed(RuntimeError):
    """libvirt or the guest did not carry out a change."""


class UnknownInstance(LookupError):
    """The instance a change names does not run on this host."""


class NoCollection(RuntimeError):
    """No collection in time: just started, or collecting after a change."""


# Changes a guest's record can undo, newest last.
MAX_UNDO = 16


def undo_history(entry, key, previous_key):
    """The values before each undoable change recorded in ``entry``.

    Records written before the history existed hold one value, under
    ``previous_key``.
    """
    if key in entry:
        return list(entry[key])
    return [entry[previous_key]] if previous_key in entry else []


def change_ids(entry, key, previous_key):
    """The change id of each value in ``undo_history``, None if unknown.

    Records written before change ids existed, and changes asked without
    one, have None.
    """
    history = undo_history(entry, key, previous_key)
    ids = list(entry.get('change_ids') or [])[-len(history):] \
        if history else []
    return [None] * (len(history) - len(ids)) + ids


def with_undo(entry, key, previous_key, value, change_id=None):
    """The history and change ids of ``entry`` with one change added.

    Both keep at most MAX_UNDO entries, newest last.
    """
    history = undo_history(entry, key, previous_key) + [value]
    ids = change_ids(entry, key, previous_key) + [change_id]
    return history[-MAX_UNDO:], ids[-MAX_UNDO:]


def check_newest(entry, key, previous_key, change_id):
    """Whether reverting change ``change_id`` of ``entry`` may go ahead.

    False when no such change is recorded (never applied, or reverted
    already): nothing to do. Refused when a later change was recorded after
    it, which a revert would undo instead. True for the newest change, and
    for any revert that names no change (the newest is undone).
    """
    if change_id is None:
        return True
    ids = change_ids(entry or {}, key, previous_key)
    if change_id not in ids:
        return False
    if ids[-1] != change_id:
        raise Refused('change %s is not the newest recorded (%s is): '
                      'revert that first' % (change_id, ids[-1]))
    return True


def not_applied(change_id):
    """A revert's answer when the change was never recorded."""
    return {'not_applied': change_id}
