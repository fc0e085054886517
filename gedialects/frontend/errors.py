"""Errors a frontend reports to the user: one line, already formatted."""


class FrontendError(Exception):
    """The input model cannot be imported; the message names file, node and why."""


class NotConstantError(FrontendError):
    """An operand the graph dialect takes as an attribute (a Reshape shape,
    Slice starts, ...) is not constant at import; `tensor` names it."""

    def __init__(self, message: str, tensor: str) -> None:
        super().__init__(message)
        self.tensor = tensor
