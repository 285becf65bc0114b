"""The CLI's command modules, one per area; the root cli.py assembles them into `app`."""
