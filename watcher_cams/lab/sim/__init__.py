"""The lab's simulator: guests with a Linux-like page cache on one host.

``cache`` models the caches, ``workloads`` the readers, ``host`` the guests
and the host they run on (producing agent reports), ``policies`` maps the
lab's strategy labels onto the policy core, ``oracle`` finds the offline
best split, ``scenarios`` holds the built-in experiments and
``experiment`` runs them.
"""
