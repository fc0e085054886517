"""Write the tiny torch.export programs (.pt2) of the trace-mode tests into
the directory argv[1].

Usage: make_torch_programs.py DIR [NAME...]   (all programs when no NAME is given)

Seeded, eval mode, static shapes; each file is a few KB.
"""

from __future__ import annotations

import os
import sys

import torch
from torch import nn


class ConvBnRelu(nn.Module):
    """conv -> bn -> relu -> global mean -> fc: the CNN head of every zoo model."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        y = self.relu(self.bn(self.conv(x)))
        return self.fc(y.mean((2, 3)))


class Linear3d(nn.Module):
    """A linear on [batch, seq, hidden]: ATen's view/addmm/view, imported as ONNX writes it."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 16)

    def forward(self, x):
        return torch.nn.functional.gelu(self.proj(x))


class Sort(nn.Module):
    """torch.sort has no importer: the error test."""

    def forward(self, x):
        return torch.sort(x, dim=-1).values


PROGRAMS = {
    "conv_bn_relu": (ConvBnRelu, (1, 3, 8, 8)),
    "linear_3d": (Linear3d, (1, 4, 8)),
    "sort": (Sort, (2, 5)),
}


def main(argv: list[str]) -> int:
    out, names = argv[1], argv[2:] or list(PROGRAMS)
    os.makedirs(out, exist_ok=True)
    for name in names:
        torch.manual_seed(0)
        cls, shape = PROGRAMS[name]
        model = cls().eval()
        program = torch.export.export(model, (torch.randn(*shape),))
        torch.export.save(program, os.path.join(out, f"{name}.pt2"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
