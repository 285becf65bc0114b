"""The prompt-prefix options' choices and defaults (`prefixes`), apart so the CLI's shared options read
them without importing the workload code (every command's start declares `--turns`).

A child option given its parent alone takes these (`prefixes.CHILD_DEFAULTS`, `prefix_segments`, the
CLI's --turns): a chat of four turns, groups of 256-token prefixes (a few-shot block) drawn zipf.
"""

PREFIX_DISTRIBUTIONS = ("zipf", "uniform")
DEFAULT_TURNS = 4
DEFAULT_GROUP_TOKENS = 256
DEFAULT_DISTRIBUTION = "zipf"
