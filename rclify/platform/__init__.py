"""Facts about the platform rclify's output runs on, kept as data with the scripts that derive
them from their sources (the man pages); libc.py reads them."""
