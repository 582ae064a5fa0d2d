"""watcher-cams-api: the agents' overviews for operators, read only."""
