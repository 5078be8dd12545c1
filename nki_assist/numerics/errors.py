"""What numerics tells a user about bad input: the spec error, and byte counts as people read them.

Below spec.py, npz.py and guard.py, which all raise or print these.
"""


class SpecError(Exception):
    """A port spec problem: the message names the file, the key and the problem."""


def human_bytes(n: int) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} B"
