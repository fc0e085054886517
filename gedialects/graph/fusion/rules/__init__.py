"""The built-in fusion rules, one module per family, in the order they are tried."""

from __future__ import annotations

from .attention import AttentionFusion
from .batch_norm import BatchnormLoopFusion, BatchnormScaleFusion
from .conv_fold import ConvBatchnormFusion, ConvScaleFusion, PadConvFusion
from .epilogue import (
    ConvActivationFusion,
    ConvAddFusion,
    GemmActivationFusion,
    MatMulActivationFusion,
    MatMulBiasAddFusion,
)
from .gelu import GeluErfFusion, GeluTanhFusion
from .horizontal import HorizontalMatMulFusion
from .layer_norm import AddLayerNormFusion, LayerNormFusion
from .loop import ElementwiseLoopFusion
from .mask import MaskWhereFusion
from .softmax import ReshapeSoftmaxFusion, SoftmaxReshapeFusion

BUILTIN_RULES = (
    # Phase.RECOGNIZE
    LayerNormFusion,
    GeluErfFusion,
    GeluTanhFusion,
    SoftmaxReshapeFusion,
    ReshapeSoftmaxFusion,
    # Phase.FOLD
    PadConvFusion,
    ConvBatchnormFusion,
    ConvScaleFusion,
    BatchnormScaleFusion,
    # Phase.ATTENTION
    AttentionFusion,
    # Phase.EPILOGUE
    ConvAddFusion,
    ConvActivationFusion,
    MatMulBiasAddFusion,
    MatMulActivationFusion,
    GemmActivationFusion,
    AddLayerNormFusion,
    BatchnormLoopFusion,
    # Phase.LOOP
    MaskWhereFusion,
    ElementwiseLoopFusion,
    # Phase.HORIZONTAL
    HorizontalMatMulFusion,
)
