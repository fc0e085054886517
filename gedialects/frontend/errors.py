"""Errors a frontend reports to the user: one line, already formatted."""


class FrontendError(Exception):
    """The input model cannot be imported; the message names file, node and why."""
