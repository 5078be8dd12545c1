"""Exceptions the simulator's lowest modules raise (dtypes, shims), below the run context."""


class UnsupportedAPI(Exception):
    """A kernel used an NKI (or other) API the simulator does not implement."""

    def __init__(self, api: str, detail: str = "", *, limit: bool = False):
        super().__init__(f"{api} is not supported by the built-in simulator" + (f": {detail}" if detail else ""))
        self.api = api
        self.limit = limit  # valid NKI the simulator does not model (SIM117), not an API NKI lacks (SIM115)
