"""`CoreTilingAttr`: the base of the CNN kernels' tiling attributes that are
named integers (`#tile.pool_tiling`, `#tile.gemm_tiling`,
`#tile.elementwise_tiling`), printed `<field = N, ...>` in their declared
order. Every field is positive except `cycles` (the cost model's prediction
for the busiest core); `cores` is the kernel's block_dim."""

from __future__ import annotations

from xdsl.dialects.builtin import IntAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.utils.exceptions import VerifyException

from gedialects.tile.conv import parse_fields


class CoreTilingAttr(ParametrizedAttribute):
    """Subclasses declare their fields as `IntAttr` parameters (one named `cores`)."""

    def __init__(self, *values: int):
        super().__init__(*(IntAttr(v) for v in values))

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        return tuple(name for name, _ in cls.get_irdl_definition().parameters)

    def value(self, key: str) -> int:
        return getattr(self, key).data

    @property
    def block_dim(self) -> int:
        return self.value("cores")

    @classmethod
    def parse_parameters(cls, parser) -> list[Attribute]:
        values = parse_fields(parser, cls.fields())
        return [IntAttr(values[k]) for k in cls.fields()]  # type: ignore[arg-type]

    def print_parameters(self, printer) -> None:
        printer.print_string("<" + ", ".join(f"{k} = {self.value(k)}" for k in self.fields()) + ">")

    def verify(self) -> None:
        sizes = [k for k in self.fields() if k != "cycles"]
        if any(self.value(k) < 1 for k in sizes) or self.value("cycles") < 0:
            raise VerifyException(f"#{self.name}: {', '.join(sizes)} are positive")
