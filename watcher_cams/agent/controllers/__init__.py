"""Controllers: each applies, records and reverts one kind of change."""


class Refused(ValueError):
    """A request the guards or the agent's settings do not allow."""


class ChangeFailed(RuntimeError):
    """libvirt or the guest did not carry out a change."""
