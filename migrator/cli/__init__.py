"""The `migrator` command line: one module per command family, registered in `main.py`."""
