# The watcher-cams panel in the admin dashboard's System group: per
# compute host, memory, KSM savings, each instance's balloon, floor and
# cache, last-level cache groups, charts, and the cams_* actions that
# changed them (doc/source/dashboard.rst).
PANEL = 'watcher_cams'
PANEL_DASHBOARD = 'admin'
PANEL_GROUP = 'admin'
ADD_PANEL = 'watcher_cams_dashboard.panel.MemoryPanel'
ADD_INSTALLED_APPS = ['watcher_cams_dashboard']
