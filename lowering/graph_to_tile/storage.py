"""Where graph values live in GM: `GmStorage` (one GM tensor) and
`TensorView` (a graph value seen in a storage).

An NC1HWC0 storage holds `slices` C1 slices of [padded_h][padded_w][C0]
elements: the map plus a zero halo (`halo`: top, bottom, left, right) as wide
as the largest padding a consumer needs. Several values may view one storage:
the operands of a channel concat written in place start at different slices,
and reshapes see their operand's bytes."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import TensorType

from gedialects.tile.conv import MapViewAttr


@dataclass
class GmStorage:
    """One GM tensor of the program (a tile.tensor once placed)."""

    name: str
    kind: str = "internal"  # input | output | internal | constant
    layout: str = "NC1HWC0"  # or ND
    halo: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # top bottom left right
    slices: int = 0  # C1 slices allocated (NC1HWC0)
    h: int = 0
    w: int = 0
    elems: int = 0  # elements (ND)
    shape: tuple = ()
    ttype: TensorType | None = None  # the GM slot's type when it is not derived from the fields above
    offset: int = -1
    overread: int = 0  # bytes past the stored tensor a kernel reads (whole fractals), reserved in GM

    @property
    def padded_h(self) -> int:
        return self.h + self.halo[0] + self.halo[1]

    @property
    def padded_w(self) -> int:
        return self.w + self.halo[2] + self.halo[3]

    def map_elements(self, c0: int) -> int:
        """Elements of an NC1HWC0 storage: its C1 slices of padded rows."""
        return self.slices * self.padded_h * self.padded_w * c0


@dataclass
class TensorView:
    """Where a graph value lives: storage, first C1 slice, format, logical shape.

    `flat_src`: for a FLAT_NC1HWC0 view (a flatten or reshape of a larger
    map), the map it flattens; readers that need the map's geometry use it."""

    storage: GmStorage
    first_slice: int
    layout: str  # NC1HWC0 | ND | NCHW | FLAT_NC1HWC0
    shape: tuple
    flat_src: TensorView | None = None
    window: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    """(source shape, offsets): an ND view that is the box of this shape at
    `offsets` of its storage read as row-major `source` (a split result
    read as attention heads, legality.head_windows); only the products and
    the heads' transposes read it (the loads they build take the window)."""

    def split_last(self, shape) -> TensorView:
        """This windowed view reshaped to `shape`, its last dim split into
        [h, d]: the box in the storage read as [.., last / d, d]."""
        assert self.window is not None
        source, offsets = self.window
        d = shape[-1]
        assert tuple(shape[:-2]) == tuple(self.shape[:-1]) and offsets[-1] % d == 0 and source[-1] % d == 0
        window = ((*source[:-1], source[-1] // d, d), (*offsets[:-1], offsets[-1] // d, 0))
        return TensorView(self.storage, 0, "ND", tuple(shape), window=window)

    def row_window(self, c0: int) -> tuple[list[int], list[int]]:
        """A tile.load window reading this view's contiguous elements from
        its origin in its NC1HWC0 storage (a [1, C, 1, 1] map, a slice of a
        channel concat written in place): (storage elements, [origin])."""
        return [self.storage.map_elements(c0)], [self.origin(c0)]

    def slice_stride(self, c0: int) -> int:
        """Elements from one C1 slice to the next."""
        return self.storage.padded_h * self.storage.padded_w * c0

    def origin(self, c0: int) -> int:
        """Element offset of (c1=0, y=0, x=0, c0=0)."""
        st = self.storage
        return self.first_slice * st.padded_h * st.padded_w * c0 + (st.halo[0] * st.padded_w + st.halo[2]) * c0


def map_view(view: TensorView, c0: int) -> MapViewAttr:
    """How a tile.conv or tile.pool sees a map stored NC1HWC0."""
    return MapViewAttr(view.shape, view.origin(c0), view.slice_stride(c0), view.storage.padded_w)
