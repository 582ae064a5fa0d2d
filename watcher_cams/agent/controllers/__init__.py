"""Controllers: each applies, records and reverts one kind of change."""


class Refused(ValueError):
    """A request the guards or the agent's settings do not allow."""


class ChangeFailed(RuntimeError):
    """libvirt or the guest did not carry out a change."""


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


def with_undo(entry, key, previous_key, value):
    """The history of ``entry`` with ``value`` added, at most MAX_UNDO."""
    return (undo_history(entry, key, previous_key) + [value])[-MAX_UNDO:]
