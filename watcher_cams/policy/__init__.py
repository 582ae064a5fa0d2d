"""The pure decision core.

Dataclasses in (:mod:`.model`), plans out. Nothing here imports oslo,
libvirt or watcher, so the simulator and the Watcher strategies run the very
same code. One module per method, plus :mod:`.baselines` and :mod:`.guards`,
which every plan passes through.
"""
