"""The watcher-cams panel for Horizon (admin dashboard, System group).

Installed with the package; enabled by copying
``watcher_cams_dashboard/enabled/_2290_admin_watcher_cams.py`` into
Horizon's ``openstack_dashboard/local/enabled/``. It reads the agents'
overviews from watcher-cams-api (catalog type ``memory-optimization``) and
plans and actions from Watcher's API, with the signed-in user's token.
"""
