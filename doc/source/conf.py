"""Sphinx configuration of watcher-cams' documentation."""

project = 'watcher-cams'
copyright = 'watcher-cams developers'

extensions = ['openstackdocstheme']

# openstackdocstheme: links to the repository and bug tracker.
openstackdocs_repo_name = 'openstack/watcher-cams'
openstackdocs_use_storyboard = False
openstackdocs_auto_name = False

html_theme = 'openstackdocs'
source_suffix = '.rst'
master_doc = 'index'
exclude_patterns = []
pygments_style = 'native'
