"""Exit codes and the usage error every command shares (the CLI maps them; commands raise them)."""

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user (missing file, bad option value): exit 2 with this message."""
