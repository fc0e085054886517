"""Regenerate the model zoo: small, randomly initialised real architectures
exported to ONNX, so tests and CI need neither torch nor transformers.

Run with a separate generation venv (never the project's .venv):

    python3 -m venv /work/zoo-venv
    /work/zoo-venv/bin/pip install torch==2.13.0            # the CPU wheel
    /work/zoo-venv/bin/pip install torch==2.13.0 transformers onnx onnxscript onnxruntime pillow
    /work/zoo-venv/bin/pip install --no-deps 'torchvision==0.28.*'
    /work/zoo-venv/bin/python tests/zoo/make_zoo.py [NAME ...] [--no-dynamo] [--out DIR]

(from the repository root; onnxruntime is optional: with it, every exported
file is checked against torch's output.) Without names every model is
rebuilt; with names only those, and MANIFEST.json keeps the other entries.

Per model NAME it writes, under tests/zoo/models/:
  NAME.onnx           legacy TorchScript exporter (dynamo=False, opset 17)
  NAME.dynamo.onnx    the default (dynamo) exporter (its default opset, 20), where it
                      succeeds, but for the LEGACY_ONLY models; its per-node
                      metadata (stack traces) is stripped
  NAME.inputs.npz     the example inputs, keyed by ONNX graph input name
  MANIFEST.json       per file: family, exporter, inputs, outputs, opset,
                      node count, op types, size

Everything is deterministic: torch.manual_seed(0) and a fixed numpy seed per
model, random init from configs (no pretrained weights), static shapes,
batch 1. Weights are kept meaningful: BatchNorm running statistics are
calibrated (cumulative average over a few train-mode passes on random
inputs) before eval, ConvNeXt's layer scale starts at 1 (not 1e-6, which
would make its blocks identities), and transformer weights use
initializer_range 0.1 so attention is not uniform.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
import torch

# torchvision's compiled ops do not load against this torch; its pure-Python
# model definitions do once the schemas its meta registrations refer to
# exist. Must come before importing torchvision (transformers imports it).
for _op in ("nms", "qnms"):
    torch.library.define(f"torchvision::{_op}", "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

import onnx  # noqa: E402
import torchvision  # noqa: E402,F401
import transformers  # noqa: E402
from torch import nn  # noqa: E402
from torchvision.models import mobilenetv3, resnet, shufflenetv2, squeezenet  # noqa: E402

MODELS_DIR = Path(__file__).resolve().parent / "models"
OPSET = 17
SEQ = 16
VOCAB = 1000
INIT = 0.1  # initializer_range of the transformer models

warnings.filterwarnings("ignore")


# ------------------------------------------------------------------ helpers


class Outputs(nn.Module):
    """Calls `model(**inputs)` and returns the named fields of its output as a tuple."""

    def __init__(self, model: nn.Module, input_names: list[str], fields: list[str]):
        super().__init__()
        self.model = model
        self.input_names = input_names
        self.fields = fields

    def forward(self, *args):
        out = self.model(**dict(zip(self.input_names, args)), return_dict=True)
        picked = []
        for f in self.fields:
            if f == "last_hidden_state" and getattr(out, "last_hidden_state", None) is None:
                picked.append(out.hidden_states[-1])
            else:
                picked.append(getattr(out, f))
        return tuple(picked)


def text_inputs(rng: np.random.Generator, mask: bool = True, vocab: int = VOCAB) -> dict[str, np.ndarray]:
    ids = rng.integers(0, vocab, (1, SEQ), dtype=np.int64)
    feeds = {"input_ids": ids}
    if mask:
        m = np.ones((1, SEQ), dtype=np.int64)
        m[0, -4:] = 0  # right padding
        feeds["attention_mask"] = m
    return feeds


def image_inputs(rng: np.random.Generator, size: int, channels: int = 3, name: str = "pixel_values") -> dict[str, np.ndarray]:
    return {name: rng.standard_normal((1, channels, size, size)).astype(np.float32)}


def hf(model_cls, config, input_names: list[str], fields: list[str]) -> nn.Module:
    return Outputs(model_cls(config), input_names, fields)


class Plain(nn.Module):
    """A model whose forward takes positional tensors and returns a tensor: as a 1-tuple."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *args):
        out = self.model(*args)
        return out if isinstance(out, tuple) else (out,)


# ------------------------------------------------------------- text models


def build_bert(rng):
    cfg = transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=64, initializer_range=INIT, attn_implementation="eager",
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.BertModel, cfg, names, ["last_hidden_state", "pooler_output"]), text_inputs(rng), \
        ["last_hidden_state", "pooler_output"]


def build_distilbert(rng):
    cfg = transformers.DistilBertConfig(
        vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128, max_position_embeddings=64,
        num_labels=4, initializer_range=INIT, output_hidden_states=True, attn_implementation="eager",
    )
    names = ["input_ids", "attention_mask"]
    m = hf(transformers.DistilBertForSequenceClassification, cfg, names, ["logits", "last_hidden_state"])
    return m, text_inputs(rng), ["logits", "last_hidden_state"]


def build_gpt2(rng):
    cfg = transformers.GPT2Config(
        vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4, use_cache=False, bos_token_id=0, eos_token_id=0,
        initializer_range=INIT, attn_implementation="eager",
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.GPT2LMHeadModel, cfg, names, ["logits"]), text_inputs(rng), ["logits"]


def build_llama(rng):
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, hidden_act="silu", use_cache=False,
        initializer_range=INIT, attn_implementation="eager",
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.LlamaForCausalLM, cfg, names, ["logits"]), text_inputs(rng), ["logits"]


def build_t5_encoder(rng):
    cfg = transformers.T5Config(
        vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
        relative_attention_num_buckets=32, relative_attention_max_distance=64, use_cache=False,
        initializer_factor=1.0, attn_implementation="eager",
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.T5EncoderModel, cfg, names, ["last_hidden_state"]), text_inputs(rng), ["last_hidden_state"]


def build_mistral(rng):
    """Mistral with transformers' default attention (sdpa): its export zeroes
    fully masked rows' probabilities with Where(IsNaN(p), 0, p)."""
    cfg = transformers.MistralConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, sliding_window=8, use_cache=False, initializer_range=INIT,
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.MistralForCausalLM, cfg, names, ["logits"]), text_inputs(rng), ["logits"]


def build_bloom(rng):
    """BLOOM: ALiBi (a per-head linear bias on the scores from the mask's
    cumulative sum) instead of position embeddings, no rotary."""
    cfg = transformers.BloomConfig(
        vocab_size=VOCAB, hidden_size=64, n_layer=2, n_head=4, use_cache=False, initializer_range=INIT,
        attn_implementation="eager",
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.BloomForCausalLM, cfg, names, ["logits"]), text_inputs(rng), ["logits"]


def build_gemma(rng):
    """Gemma: RMSNorm scaled by (1 + w), GeGLU (tanh GELU), embeddings
    times sqrt(hidden), multi-query attention, head_dim apart from hidden."""
    cfg = transformers.GemmaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=1, head_dim=32, max_position_embeddings=64, use_cache=False, initializer_range=INIT,
        attn_implementation="eager",
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.GemmaForCausalLM, cfg, names, ["logits"]), text_inputs(rng), ["logits"]


def build_phi(rng):
    """Phi: partial rotary embeddings (a quarter of each head), attention and
    MLP in parallel off one LayerNorm, tanh GELU."""
    cfg = transformers.PhiConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        partial_rotary_factor=0.25, max_position_embeddings=64, use_cache=False, initializer_range=INIT,
        attn_implementation="eager",
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.PhiForCausalLM, cfg, names, ["logits"]), text_inputs(rng), ["logits"]


def build_opt(rng):
    """OPT: learned positions indexed by the attention mask's cumulative sum,
    ReLU MLP, pre-LayerNorm."""
    cfg = transformers.OPTConfig(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, ffn_dim=128, num_attention_heads=4,
        max_position_embeddings=64, word_embed_proj_dim=64, use_cache=False, init_std=INIT,
        attn_implementation="eager", pad_token_id=1, bos_token_id=2, eos_token_id=2,
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.OPTForCausalLM, cfg, names, ["logits"]), text_inputs(rng), ["logits"]


def build_clip_text(rng):
    """CLIP's text tower: causal attention, quick GELU, and the pooled output
    taken at each sequence's highest token id (ArgMax, then a gather)."""
    cfg = transformers.CLIPTextConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=SEQ, hidden_act="quick_gelu", initializer_range=INIT, eos_token_id=2,
        attn_implementation="eager",
    )
    names = ["input_ids", "attention_mask"]
    m = hf(transformers.CLIPTextModel, cfg, names, ["last_hidden_state", "pooler_output"])
    return m, text_inputs(rng), ["last_hidden_state", "pooler_output"]


def build_deberta_v2(rng):
    """DeBERTa-v2: disentangled attention (content-to-position and
    position-to-content scores through log-bucketed relative positions,
    gathered per query/key pair)."""
    cfg = transformers.DebertaV2Config(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=64, relative_attention=True, position_buckets=8, max_relative_positions=32,
        pos_att_type=["p2c", "c2p"], norm_rel_ebd="layer_norm", share_att_key=True, position_biased_input=False,
        initializer_range=INIT,
    )
    names = ["input_ids", "attention_mask"]
    return hf(transformers.DebertaV2Model, cfg, names, ["last_hidden_state"]), text_inputs(rng), ["last_hidden_state"]


def build_bart(rng):
    """BART, encoder and decoder: learned positions, the decoder's causal
    self-attention and its cross-attention over the encoder's states."""
    cfg = transformers.BartConfig(
        vocab_size=VOCAB, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=64,
        use_cache=False, init_std=INIT, attn_implementation="eager", scale_embedding=True,
    )
    names = ["input_ids", "attention_mask", "decoder_input_ids"]
    feeds = text_inputs(rng)
    feeds["decoder_input_ids"] = rng.integers(3, VOCAB, (1, SEQ // 2), dtype=np.int64)
    return hf(transformers.BartForConditionalGeneration, cfg, names, ["logits"]), feeds, ["logits"]


# ------------------------------------------------------------ audio models


def build_whisper_encoder(rng):
    """Whisper's encoder: two 1-d convs (the second of stride 2) over log-mel
    features, GELU, then transformer layers."""
    cfg = transformers.WhisperConfig(
        vocab_size=VOCAB, num_mel_bins=16, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_source_positions=32,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1, init_std=INIT,
        attn_implementation="eager",
    )
    m = Outputs(transformers.WhisperModel(cfg).get_encoder(), ["input_features"], ["last_hidden_state"])
    return m, {"input_features": rng.standard_normal((1, 16, 64)).astype(np.float32)}, ["last_hidden_state"]


def build_wav2vec2(rng):
    """wav2vec2: a 1-d conv feature extractor on the raw waveform (group norm
    of one group per channel after the first conv, exported as
    InstanceNormalization), a grouped 1-d positional conv, transformer layers."""
    cfg = transformers.Wav2Vec2Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4, vocab_size=32, initializer_range=INIT, attn_implementation="eager",
    )
    m = Outputs(transformers.Wav2Vec2Model(cfg), ["input_values"], ["last_hidden_state"])
    return m, {"input_values": rng.standard_normal((1, 800)).astype(np.float32)}, ["last_hidden_state"]


# ----------------------------------------------------------- vision models


def build_vit(rng):
    cfg = transformers.ViTConfig(
        image_size=32, patch_size=4, num_channels=3, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, num_labels=10, initializer_range=INIT, attn_implementation="eager",
    )
    return hf(transformers.ViTForImageClassification, cfg, ["pixel_values"], ["logits"]), image_inputs(rng, 32), ["logits"]


def build_swin(rng):
    cfg = transformers.SwinConfig(
        image_size=32, patch_size=2, num_channels=3, embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=4,
        mlp_ratio=2.0, num_labels=10, initializer_range=INIT,
    )
    return hf(transformers.SwinForImageClassification, cfg, ["pixel_values"], ["logits"]), image_inputs(rng, 32), ["logits"]


def build_segformer(rng):
    cfg = transformers.SegformerConfig(
        num_channels=3, num_encoder_blocks=4, depths=[1, 1, 1, 1], sr_ratios=[8, 4, 2, 1],
        hidden_sizes=[8, 16, 32, 64], patch_sizes=[7, 3, 3, 3], strides=[4, 2, 2, 2],
        num_attention_heads=[1, 1, 2, 2], mlp_ratios=[2, 2, 2, 2], decoder_hidden_size=32, num_labels=4,
        initializer_range=INIT,
    )
    m = hf(transformers.SegformerForSemanticSegmentation, cfg, ["pixel_values"], ["logits"])
    return m, image_inputs(rng, 64), ["logits"]


def build_convnext(rng):
    cfg = transformers.ConvNextConfig(
        num_channels=3, patch_size=4, num_stages=4, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 2, 1],
        layer_scale_init_value=1.0, num_labels=10, image_size=64, initializer_range=INIT,
    )
    return hf(transformers.ConvNextForImageClassification, cfg, ["pixel_values"], ["logits"]), image_inputs(rng, 64), ["logits"]


def build_efficientnet(rng):
    cfg = transformers.EfficientNetConfig(
        image_size=64, width_coefficient=0.25, depth_coefficient=0.5, hidden_dim=320, num_labels=10,
        dropout_rate=0.0, drop_connect_rate=0.0,
    )
    m = hf(transformers.EfficientNetForImageClassification, cfg, ["pixel_values"], ["logits"])
    for mod in m.modules():  # its _init_weights draws BN scales from N(0, 0.02): activations vanish (~1e-35)
        if isinstance(mod, nn.BatchNorm2d):
            nn.init.ones_(mod.weight)
            nn.init.zeros_(mod.bias)
    return m, image_inputs(rng, 64), ["logits"]


def build_mobilenet_v2(rng):
    cfg = transformers.MobileNetV2Config(
        num_channels=3, image_size=64, depth_multiplier=0.25, min_depth=8, tf_padding=True, finegrained_output=False,
        num_labels=10,
        classifier_dropout_prob=0.0,
    )
    m = hf(transformers.MobileNetV2ForImageClassification, cfg, ["pixel_values"], ["logits"])
    return m, image_inputs(rng, 64), ["logits"]


def build_regnet(rng):
    cfg = transformers.RegNetConfig(
        num_channels=3, embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 2, 1], groups_width=8,
        layer_type="y", num_labels=10,
    )
    return hf(transformers.RegNetForImageClassification, cfg, ["pixel_values"], ["logits"]), image_inputs(rng, 64), ["logits"]


def build_resnet_hf(rng):
    cfg = transformers.ResNetConfig(
        num_channels=3, embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
        layer_type="bottleneck", num_labels=10,
    )
    return hf(transformers.ResNetForImageClassification, cfg, ["pixel_values"], ["logits"]), image_inputs(rng, 64), ["logits"]


def build_convnextv2(rng):
    """ConvNeXt V2: ConvNeXt's blocks with global response normalisation (an
    L2 norm over the pixels, divided by its mean over the channels) in the MLP."""
    cfg = transformers.ConvNextV2Config(
        num_channels=3, patch_size=4, num_stages=4, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 2, 1],
        num_labels=10, image_size=64, initializer_range=INIT,
    )
    m = hf(transformers.ConvNextV2ForImageClassification, cfg, ["pixel_values"], ["logits"])
    for mod in m.modules():  # GRN starts at gamma = beta = 0 (an identity): give it something to do
        if type(mod).__name__ == "ConvNextV2GRN":
            nn.init.normal_(mod.weight, std=0.5)
            nn.init.normal_(mod.bias, std=0.1)
    return m, image_inputs(rng, 64), ["logits"]


def build_mobilevit(rng):
    """MobileViT: MobileNetV2 blocks, then local convs, unfolding the map into
    2x2 patches, a transformer over them, folding back and a fusing conv."""
    cfg = transformers.MobileViTConfig(
        num_channels=3, image_size=64, patch_size=2, hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64],
        num_attention_heads=2, mlp_ratio=2.0, expand_ratio=2.0, num_labels=10, initializer_range=INIT,
        classifier_dropout_prob=0.0, attn_implementation="eager",
    )
    return hf(transformers.MobileViTForImageClassification, cfg, ["pixel_values"], ["logits"]), image_inputs(rng, 64), ["logits"]


def build_levit(rng):
    """LeViT: a conv stem with hardswish, attention with learned per-head
    biases gathered by relative offsets, BatchNorm after every linear,
    attention blocks that subsample the queries."""
    cfg = transformers.LevitConfig(
        image_size=64, num_channels=3, kernel_size=3, stride=2, padding=1, patch_size=16,
        hidden_sizes=[32, 48, 64], num_attention_heads=[2, 3, 4], depths=[1, 1, 1], key_dim=[8, 8, 8],
        drop_path_rate=0, mlp_ratio=[2, 2, 2], attention_ratio=[2, 2, 2], num_labels=10, initializer_range=INIT,
    )
    m = hf(transformers.LevitForImageClassification, cfg, ["pixel_values"], ["logits"])
    return m, image_inputs(rng, 64), ["logits"]


def build_poolformer(rng):
    """PoolFormer: token mixing by average pooling (without the padding in
    the count) minus the input, GroupNorm of one group, layer scale."""
    cfg = transformers.PoolFormerConfig(
        num_channels=3, pool_size=3, hidden_sizes=[8, 16, 32, 64], patch_sizes=[7, 3, 3, 3], strides=[4, 2, 2, 2],
        padding=[2, 1, 1, 1], depths=[1, 1, 2, 1], mlp_ratio=2.0, layer_scale_init_value=1.0, num_labels=10,
    )
    return hf(transformers.PoolFormerForImageClassification, cfg, ["pixel_values"], ["logits"]), image_inputs(rng, 64), ["logits"]


def build_dinov2(rng):
    """DINOv2: ViT with a register-free class token, layer scale and SwiGLU MLPs."""
    cfg = transformers.Dinov2Config(
        image_size=32, patch_size=4, num_channels=3, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        mlp_ratio=2, use_swiglu_ffn=True, layerscale_value=1.0, initializer_range=INIT, attn_implementation="eager",
    )
    m = Outputs(transformers.Dinov2Model(cfg), ["pixel_values"], ["last_hidden_state", "pooler_output"])
    return m, image_inputs(rng, 32), ["last_hidden_state", "pooler_output"]


# ------------------------------------------------------ torchvision models


class NarrowResNet(resnet.ResNet):
    """torchvision's ResNet (its blocks, _make_layer and forward) with stage
    widths base, 2 base, 4 base, 8 base instead of 64..512."""

    def __init__(self, block, layers, num_classes: int = 10, base: int = 8, groups: int = 1, width_per_group: int = 64,
                 replace_stride_with_dilation=(False, False, False)):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = base
        self.dilation = 1
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, base, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, base, layers[0])
        dilate = replace_stride_with_dilation
        self.layer2 = self._make_layer(block, base * 2, layers[1], stride=2, dilate=dilate[0])
        self.layer3 = self._make_layer(block, base * 4, layers[2], stride=2, dilate=dilate[1])
        self.layer4 = self._make_layer(block, base * 8, layers[3], stride=2, dilate=dilate[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(base * 8 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


def build_tv_resnet18(rng):
    return Plain(NarrowResNet(resnet.BasicBlock, [2, 2, 2, 2], num_classes=10, base=8)), \
        image_inputs(rng, 64, name="input"), ["logits"]


def build_tv_mobilenet_v3_small(rng):
    setting, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
    m = mobilenetv3.MobileNetV3(setting, last, num_classes=10)
    for mod in m.classifier:  # torchvision's N(0, 0.01) init makes the logits ~1e-2: default init instead
        if isinstance(mod, nn.Linear):
            mod.reset_parameters()
    return Plain(m), image_inputs(rng, 64, name="input"), ["logits"]


def build_tv_squeezenet1_1(rng):
    """squeezenet1_1's layer sequence with every width divided by 4."""
    m = squeezenet.squeezenet1_1(weights=None, num_classes=10)
    F = squeezenet.Fire
    m.features = nn.Sequential(
        nn.Conv2d(3, 16, kernel_size=3, stride=2),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        F(16, 4, 16, 16),
        F(32, 4, 16, 16),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        F(32, 8, 32, 32),
        F(64, 8, 32, 32),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        F(64, 12, 48, 48),
        F(96, 12, 48, 48),
        F(96, 16, 64, 64),
        F(128, 16, 64, 64),
    )
    final = nn.Conv2d(128, 10, kernel_size=1)  # default init, not torchvision's N(0, 0.01) (logits ~1e-2)
    m.classifier[1] = final
    for mod in m.features.modules():
        if isinstance(mod, nn.Conv2d):
            nn.init.kaiming_uniform_(mod.weight)
            nn.init.constant_(mod.bias, 0)
    return Plain(m), image_inputs(rng, 64, name="input"), ["logits"]


def build_tv_shufflenet_v2_x0_5(rng):
    # shufflenet_v2_x0_5's stages ([4, 8, 4] repeats, 24/48/96/192 channels), last conv 256 instead of 1024
    m = shufflenetv2.ShuffleNetV2([4, 8, 4], [24, 48, 96, 192, 256], num_classes=10)
    return Plain(m), image_inputs(rng, 64, name="input"), ["logits"]


def build_tv_resnext(rng):
    """torchvision's ResNeXt bottleneck (grouped 3x3 convs, 4 groups) in a
    narrow ResNet, [1, 1, 1, 1] blocks."""
    m = NarrowResNet(resnet.Bottleneck, [1, 1, 1, 1], num_classes=10, base=8, groups=4, width_per_group=16)
    return Plain(m), image_inputs(rng, 64, name="input"), ["logits"]


class TinyDeepLabV3(nn.Module):
    """DeepLabV3's shape: a narrow ResNet whose last two stages keep the
    resolution with dilated convs (output stride 8), torchvision's ASPP
    (dilations 2, 4, 6, and the image pooling branch upsampled bilinearly),
    a 1x1 classifier and a bilinear upsampling to the input size."""

    def __init__(self, classes: int = 4):
        super().__init__()
        from torchvision.models.segmentation.deeplabv3 import ASPP

        net = NarrowResNet(resnet.Bottleneck, [1, 1, 1, 1], base=8, replace_stride_with_dilation=[False, True, True])
        self.backbone = nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool, net.layer1, net.layer2, net.layer3,
                                      net.layer4)
        self.aspp = ASPP(256, [2, 4, 6], out_channels=16)
        self.head = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, classes, 1))

    def forward(self, x):
        y = self.head(self.aspp(self.backbone(x)))
        return (nn.functional.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False),)


def build_deeplabv3(rng):
    return TinyDeepLabV3(), image_inputs(rng, 64, name="input"), ["logits"]


# -------------------------------------------------------------------- UNet


class DoubleConv(nn.Sequential):
    def __init__(self, cin: int, cout: int):
        super().__init__(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        )


class UNet(nn.Module):
    """A 4-level UNet: MaxPool down, ConvTranspose2d(2, stride 2) up, skip concatenation."""

    def __init__(self, cin: int = 3, classes: int = 3, widths=(8, 16, 32, 64)):
        super().__init__()
        self.inc = DoubleConv(cin, widths[0])
        self.downs = nn.ModuleList(DoubleConv(a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.pool = nn.MaxPool2d(2)
        rev = widths[::-1]
        self.ups = nn.ModuleList(nn.ConvTranspose2d(a, b, 2, stride=2) for a, b in zip(rev[:-1], rev[1:]))
        self.up_convs = nn.ModuleList(DoubleConv(2 * b, b) for b in rev[1:])
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(self.pool(skips[-1])))
        y = skips.pop()
        for up, conv in zip(self.ups, self.up_convs):
            y = conv(torch.cat([skips.pop(), up(y)], dim=1))
        return (self.head(y),)


def build_unet(rng):
    return UNet(), image_inputs(rng, 64, name="input"), ["logits"]


# -------------------------------------------------------------------- YOLO


class ConvBNSiLU(nn.Sequential):
    def __init__(self, cin: int, cout: int, k: int = 1, s: int = 1):
        super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class SPPF(nn.Module):
    """YOLOv5/v8's spatial pyramid pooling: three 5x5 max pools of stride 1,
    pads 2, in a chain (of SiLU outputs: some negative), concatenated."""

    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.cv1, self.cv2 = ConvBNSiLU(cin, cin // 2), ConvBNSiLU(cin * 2, cout)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        a = self.pool(x)
        b = self.pool(a)
        return self.cv2(torch.cat([x, a, b, self.pool(b)], 1))


class TinyYOLO(nn.Module):
    """A YOLOv8-style backbone and neck, small: strided Conv-BN-SiLU stages,
    SPPF, nearest 2x upsampling, concatenation with the stride-8 features and
    a 1x1 detection head (4 box + 8 class channels per cell)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(ConvBNSiLU(3, 8, 3, 2), ConvBNSiLU(8, 16, 3, 2), ConvBNSiLU(16, 16, 3, 1))
        self.p3 = ConvBNSiLU(16, 32, 3, 2)
        self.p4 = nn.Sequential(ConvBNSiLU(32, 64, 3, 2), SPPF(64, 64))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.neck = ConvBNSiLU(96, 32, 3, 1)
        self.head = nn.Conv2d(32, 12, 1)

    def forward(self, x):
        p3 = self.p3(self.stem(x))
        y = self.neck(torch.cat([p3, self.up(self.p4(p3))], 1))
        return (self.head(y),)


def build_yolo(rng):
    return TinyYOLO(), image_inputs(rng, 64, name="images"), ["preds"]


# ------------------------------------------------------------------- DCGAN


class DCGANGenerator(nn.Sequential):
    """The PyTorch examples' DCGAN generator (netG) at 32x32: a 4x4
    up-convolution of the 1x1 latent, then 4x4 up-convolutions of stride 2,
    pads 1 (overlapping windows), BatchNorm and ReLU between, Tanh last."""

    def __init__(self, nz: int = 16, ngf: int = 8, nc: int = 3):
        super().__init__(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh(),
        )


def build_dcgan(rng):
    return Plain(DCGANGenerator()), image_inputs(rng, 1, channels=16, name="latent"), ["image"]


# ------------------------------------------------------------------ registry

# name: (family, source, builder)
MODELS = {
    "bert": ("BERT", "transformers.BertModel", build_bert),
    "distilbert": ("DistilBERT", "transformers.DistilBertForSequenceClassification", build_distilbert),
    "gpt2": ("GPT-2", "transformers.GPT2LMHeadModel", build_gpt2),
    "llama": ("Llama", "transformers.LlamaForCausalLM (GQA 4q/2kv heads)", build_llama),
    "t5_encoder": ("T5", "transformers.T5EncoderModel", build_t5_encoder),
    "vit": ("ViT", "transformers.ViTForImageClassification", build_vit),
    "swin": ("Swin", "transformers.SwinForImageClassification", build_swin),
    "segformer": ("SegFormer", "transformers.SegformerForSemanticSegmentation", build_segformer),
    "convnext": ("ConvNeXt", "transformers.ConvNextForImageClassification", build_convnext),
    "efficientnet": ("EfficientNet", "transformers.EfficientNetForImageClassification", build_efficientnet),
    "mobilenet_v2": ("MobileNetV2", "transformers.MobileNetV2ForImageClassification (tf_padding, depth 0.25)", build_mobilenet_v2),
    "regnet": ("RegNet", "transformers.RegNetForImageClassification (Y)", build_regnet),
    "resnet_hf": ("ResNet", "transformers.ResNetForImageClassification (bottleneck)", build_resnet_hf),
    "tv_resnet18": ("ResNet", "torchvision resnet18 (BasicBlock [2,2,2,2], widths 8..64)", build_tv_resnet18),
    "tv_mobilenet_v3_small": ("MobileNetV3", "torchvision mobilenet_v3_small (width_mult 0.25)", build_tv_mobilenet_v3_small),
    "tv_squeezenet1_1": ("SqueezeNet", "torchvision squeezenet1_1 (widths / 4)", build_tv_squeezenet1_1),
    "tv_shufflenet_v2_x0_5": ("ShuffleNetV2", "torchvision shufflenet_v2_x0_5 (last conv 256)", build_tv_shufflenet_v2_x0_5),
    "unet": ("UNet", "custom torch UNet (4 levels, ConvTranspose2d)", build_unet),
    "mistral": ("Mistral", "transformers.MistralForCausalLM (sdpa attention: its NaN guard; sliding window 8)", build_mistral),
    "whisper_encoder": ("Whisper", "transformers.WhisperModel encoder (1-d conv stem)", build_whisper_encoder),
    "wav2vec2": ("wav2vec2", "transformers.Wav2Vec2Model (1-d conv feature extractor, group norm)", build_wav2vec2),
    "yolo": ("YOLO", "custom torch YOLOv8-style backbone and neck (Conv-BN-SiLU, SPPF, upsample, concat)", build_yolo),
    "bloom": ("BLOOM", "transformers.BloomForCausalLM (ALiBi)", build_bloom),
    "gemma": ("Gemma", "transformers.GemmaForCausalLM (GeGLU, multi-query, head_dim 32)", build_gemma),
    "phi": ("Phi", "transformers.PhiForCausalLM (partial rotary, parallel attention and MLP)", build_phi),
    "opt": ("OPT", "transformers.OPTForCausalLM (positions from the mask's cumsum, ReLU)", build_opt),
    "clip_text": ("CLIP", "transformers.CLIPTextModel (causal, quick GELU, pooled at the argmax token)", build_clip_text),
    "deberta_v2": ("DeBERTa-v2", "transformers.DebertaV2Model (disentangled relative attention)", build_deberta_v2),
    "bart": ("BART", "transformers.BartForConditionalGeneration (encoder, decoder, cross-attention)", build_bart),
    "convnextv2": ("ConvNeXtV2", "transformers.ConvNextV2ForImageClassification (GRN)", build_convnextv2),
    "mobilevit": ("MobileViT", "transformers.MobileViTForImageClassification (unfold, transformer, fold)", build_mobilevit),
    "levit": ("LeViT", "transformers.LevitForImageClassification (attention biases, hardswish, subsampling)", build_levit),
    "poolformer": ("PoolFormer", "transformers.PoolFormerForImageClassification (pooling token mixer)", build_poolformer),
    "dinov2": ("DINOv2", "transformers.Dinov2Model (layer scale, SwiGLU)", build_dinov2),
    "tv_resnext": ("ResNeXt", "torchvision ResNet Bottleneck, groups 4 (widths 8..64)", build_tv_resnext),
    "deeplabv3": ("DeepLabV3", "narrow torchvision ResNet, dilated (output stride 8), torchvision ASPP, bilinear upsampling",
                  build_deeplabv3),
    "dcgan": ("DCGAN", "PyTorch examples' DCGAN generator (nz 16, ngf 8, 32x32; ConvTranspose2d 4x4 stride 2)",
              build_dcgan),
}


LEGACY_ONLY = {"bloom", "gemma", "phi", "opt", "clip_text", "deberta_v2", "bart", "convnextv2", "mobilevit", "levit",
               "poolformer", "dinov2", "tv_resnext", "deeplabv3"}
"""Committed in the legacy exporter's form only (the test time and size of
the zoo; each one's dynamo export imported and ran as its legacy one did
when it was added, 2026-12-04: `--dynamo-too` writes it)."""


def calibrate_batch_norm(model: nn.Module, example: dict[str, np.ndarray], seed: int, passes: int = 4, batch: int = 8) -> bool:
    """BatchNorm running statistics := cumulative mean/var over `passes`
    train-mode forward passes on standard-normal inputs of the example's
    shape (batch `batch`); everything else stays in eval mode."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return False
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
        m.train()
    with torch.no_grad():
        for _ in range(passes):
            args = [torch.randn((batch,) + v.shape[1:], generator=gen) for v in example.values()]
            model(*args)
    model.eval()
    return True


def describe(path: Path, family: str, source: str, exporter: str) -> dict:
    m = onnx.load(str(path))
    inits = {i.name for i in m.graph.initializer}
    def info(v):
        t = v.type.tensor_type
        return {
            "name": v.name,
            "shape": [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim],
            "dtype": onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name,
        }
    return {
        "family": family,
        "source": source,
        "exporter": exporter,
        "inputs": [info(v) for v in m.graph.input if v.name not in inits],
        "outputs": [o.name for o in m.graph.output],
        "opset": next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
        "nodes": len(m.graph.node),
        "op_types": sorted({n.op_type for n in m.graph.node}),
        "size": path.stat().st_size,
    }


def strip_node_metadata(path: Path) -> None:
    """Drop the dynamo exporter's per-node metadata_props (torch stack traces
    and module names: ~40% of the file) and doc strings; the graph is unchanged."""
    m = onnx.load(str(path))
    graphs = [m.graph]
    while graphs:
        g = graphs.pop()
        for n in g.node:
            del n.metadata_props[:]
            n.doc_string = ""
            graphs.extend(a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH)
    onnx.save(m, str(path))


def graph_input_names(path: Path) -> list[str]:
    m = onnx.load(str(path))
    inits = {i.name for i in m.graph.initializer}
    return [v.name for v in m.graph.input if v.name not in inits]


def check_with_ort(path: Path, feeds: dict[str, np.ndarray], want: list[np.ndarray]) -> str:
    try:
        import onnxruntime as ort
    except ImportError:
        return "onnxruntime not installed"
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    got = sess.run(None, {k: v for k, v in feeds.items() if k in names})
    errs = [float(np.abs(g - w).max()) for g, w in zip(got, want)]
    return "ort vs torch max err " + ", ".join(f"{e:.2e}" for e in errs)


def build_one(name: str, dynamo: bool) -> dict[str, dict]:
    family, source, builder = MODELS[name]
    seed = zlib.crc32(name.encode()) & 0xFFFF
    torch.manual_seed(0)
    rng = np.random.default_rng(seed)
    model, feeds, out_names = builder(rng)
    model.eval()
    calibrated = calibrate_batch_norm(model, feeds, seed) if all(v.dtype == np.float32 for v in feeds.values()) else False
    args = tuple(torch.from_numpy(v) for v in feeds.values())
    with torch.no_grad():
        want = [t.numpy() for t in model(*args)]
    params = sum(p.numel() for p in model.parameters())
    stats = ", ".join(f"{n} std {w.std():.3g} max|.| {np.abs(w).max():.3g}" for n, w in zip(out_names, want))
    print(f"{name}: {params} params{', BN calibrated' if calibrated else ''}; {stats}")
    for n, w in zip(out_names, want):
        if not np.isfinite(w).all() or w.std() < 1e-3:
            print(f"  WARNING: output {n} is degenerate (std {w.std():.3g})")
    entries = {}
    in_names = list(feeds)
    legacy = MODELS_DIR / f"{name}.onnx"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        torch.onnx.export(model, args, str(legacy), dynamo=False, opset_version=OPSET,
                          input_names=in_names, output_names=out_names, do_constant_folding=True)
    onnx.checker.check_model(str(legacy))
    entries[legacy.name] = describe(legacy, family, source, "legacy")
    names = graph_input_names(legacy)
    np.savez(MODELS_DIR / f"{name}.inputs.npz", **{k: feeds[k] for k in names})
    print(f"  {legacy.name}: {entries[legacy.name]['nodes']} nodes, {legacy.stat().st_size / 1e3:.0f} kB; "
          f"{check_with_ort(legacy, feeds, want)}")
    if not dynamo:
        return entries
    path = MODELS_DIR / f"{name}.dynamo.onnx"
    log = io.StringIO()
    try:
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            torch.onnx.export(model, args, str(path), dynamo=True, external_data=False,
                              input_names=in_names, output_names=out_names)
        strip_node_metadata(path)
        onnx.checker.check_model(str(path))
    except Exception as e:  # noqa: BLE001 - report and skip
        cause = e
        while cause.__cause__ is not None:  # the exporter wraps the real error
            cause = cause.__cause__
        first = f"{type(cause).__name__}: " + (str(cause).strip().splitlines() or [""])[0]
        print(f"  {path.name}: SKIPPED, dynamo export failed: {first[:300]}")
        for p in (path, Path(str(path) + ".data")):
            p.unlink(missing_ok=True)
        return entries
    entries[path.name] = describe(path, family, source, "dynamo")
    dnames = graph_input_names(path)
    if dnames != names:
        np.savez(MODELS_DIR / f"{name}.dynamo.inputs.npz", **{k: feeds[k] for k in dnames})
    print(f"  {path.name}: {entries[path.name]['nodes']} nodes, opset {entries[path.name]['opset']}, "
          f"{path.stat().st_size / 1e3:.0f} kB; {check_with_ort(path, feeds, want)}")
    return entries


def main(argv=None) -> int:
    global MODELS_DIR
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help=f"models to rebuild (default all: {', '.join(MODELS)})")
    p.add_argument("--no-dynamo", action="store_true", help="skip the dynamo exporter")
    p.add_argument("--dynamo-too", action="store_true", help="the dynamo export of LEGACY_ONLY models too")
    p.add_argument("--out", type=Path, default=None, help=f"output folder (default {MODELS_DIR})")
    args = p.parse_args(argv)
    if args.out is not None:
        MODELS_DIR = args.out.resolve()
    unknown = [n for n in args.names if n not in MODELS]
    if unknown:
        p.error(f"unknown model(s) {', '.join(unknown)}")
    MODELS_DIR.mkdir(parents=True, exist_ok=True)
    manifest_path = MODELS_DIR / "MANIFEST.json"
    manifest = {}
    if args.names and manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
    failed = []
    for name in args.names or list(MODELS):
        for stale in (f"{name}.onnx", f"{name}.dynamo.onnx"):
            manifest.pop(stale, None)
        try:
            manifest.update(build_one(name, not args.no_dynamo and (args.dynamo_too or name not in LEGACY_ONLY)))
        except Exception as e:  # noqa: BLE001
            first = (str(e).strip().splitlines() or [""])[0]
            print(f"{name}: FAILED: {type(e).__name__}: {first[:300]}")
            failed.append(name)
    manifest = dict(sorted(manifest.items()))
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    total = sum(e["size"] for e in manifest.values())
    print(f"{len(manifest)} files, {total / 1e6:.2f} MB in {MODELS_DIR}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
