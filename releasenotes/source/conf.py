"""Sphinx configuration of watcher-cams' release notes (reno)."""

project = 'watcher-cams release notes'
copyright = 'watcher-cams developers'

extensions = ['openstackdocstheme', 'reno.sphinxext']

openstackdocs_repo_name = 'openstack/watcher-cams'
openstackdocs_use_storyboard = False
openstackdocs_auto_name = False

html_theme = 'openstackdocs'
source_suffix = '.rst'
master_doc = 'index'
exclude_patterns = []
