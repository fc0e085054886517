"""The zoo's families written directly in torch, small: what trace mode is
tested on. Weights are random but meaningful (BatchNorm statistics
calibrated on random inputs, transformer weights at std 0.1 so attention is
not uniform); every builder is seeded and returns (model in eval mode,
example inputs)."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


def calibrate_batch_norm(model: nn.Module, make_input, passes: int = 4) -> nn.Module:
    """Running statistics from a few train-mode passes (cumulative average),
    so BatchNorm neither blows activations up nor flattens them."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(passes):
            model(make_input())
    return model.eval()


def init_transformer(model: nn.Module, std: float = 0.1) -> nn.Module:
    for name, p in model.named_parameters():
        if p.dim() >= 2:
            nn.init.normal_(p, std=std)
        elif name.endswith("bias"):
            nn.init.normal_(p, std=0.02)
    return model.eval()


# ------------------------------------------------------------------- CNNs


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + identity)


class ResNet(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = BasicBlock(16, 16, 1)
        self.layer2 = BasicBlock(16, 32, 2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: expand 1x1, depthwise 3x3, project 1x1 (ReLU6)."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.use_residual = stride == 1 and cin == cout
        self.conv = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )

    def forward(self, x):
        y = self.conv(x)
        return x + y if self.use_residual else y


class MobileNetV2(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6(inplace=True)),
            InvertedResidual(16, 16, 1, 1),
            InvertedResidual(16, 24, 2, 4),
            InvertedResidual(24, 24, 1, 4),
        )
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(24, classes))

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, reduced: int):
        super().__init__()
        self.reduce = nn.Conv2d(channels, reduced, 1)
        self.expand = nn.Conv2d(reduced, channels, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = torch.sigmoid(self.expand(F.silu(self.reduce(s))))
        return x * s


class MBConv(nn.Module):
    """EfficientNet's block: expand, depthwise, squeeze-excite, project (SiLU)."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.expand = nn.Sequential(nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.SiLU())
        self.depthwise = nn.Sequential(
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.SiLU()
        )
        self.se = SqueezeExcite(hidden, max(1, cin // 4))
        self.project = nn.Sequential(nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.project(self.se(self.depthwise(self.expand(x))))
        return x + y if self.residual else y


class EfficientNet(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU())
        self.blocks = nn.Sequential(MBConv(16, 16, 1, 1), MBConv(16, 24, 2, 4), MBConv(24, 24, 1, 4))
        self.head = nn.Sequential(nn.Conv2d(24, 64, 1, bias=False), nn.BatchNorm2d(64), nn.SiLU())
        self.classifier = nn.Linear(64, classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.classifier(x.mean((2, 3)))


# ----------------------------------------------------------- transformers


class SelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, causal: bool = False):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)

    def split_heads(self, x):
        b, s, h = x.shape
        return x.view(b, s, self.heads, h // self.heads).transpose(1, 2)

    def forward(self, x, additive_mask=None):
        b, s, h = x.shape
        q, k, v = self.split_heads(self.query(x)), self.split_heads(self.key(x)), self.split_heads(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(h // self.heads)
        if self.causal:
            causal = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
            scores = scores + causal
        if additive_mask is not None:
            scores = scores + additive_mask
        probs = torch.softmax(scores, dim=-1)
        context = (probs @ v).transpose(1, 2).reshape(b, s, h)
        return self.out(context)


class EncoderLayer(nn.Module):
    """BERT's post-norm layer: attention, add & norm, GELU FFN, add & norm."""

    def __init__(self, hidden: int, heads: int, ffn: int):
        super().__init__()
        self.attention = SelfAttention(hidden, heads)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x, additive_mask):
        x = self.norm1(x + self.attention(x, additive_mask))
        return self.norm2(x + self.output(F.gelu(self.intermediate(x))))


class Bert(nn.Module):
    def __init__(self, vocab: int = 100, seq: int = 16, hidden: int = 32, heads: int = 4, ffn: int = 64, layers: int = 2):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(seq, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.word_embeddings(input_ids) + self.position_embeddings(positions))
        # HF's padding mask: 0 where attended, the dtype's minimum where padded
        additive = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, additive)
        return x, torch.tanh(self.pooler(x[:, 0]))


class DecoderBlock(nn.Module):
    """GPT-2's pre-norm block with a causal mask."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = SelfAttention(hidden, heads, causal=True)
        self.ln_2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(approximate="tanh"), nn.Linear(4 * hidden, hidden))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    def __init__(self, vocab: int = 100, seq: int = 16, hidden: int = 32, heads: int = 4, layers: int = 2):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(seq, hidden)
        self.h = nn.ModuleList(DecoderBlock(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1])
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class ViT(nn.Module):
    def __init__(self, image: int = 32, patch: int = 8, hidden: int = 32, heads: int = 4, layers: int = 2, classes: int = 10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, hidden, patch, patch)
        tokens = (image // patch) ** 2 + 1
        self.cls_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.pos_embed = nn.Parameter(torch.zeros(1, tokens, hidden))
        self.blocks = nn.ModuleList(DecoderBlock(hidden, heads) for _ in range(layers))
        for block in self.blocks:
            block.attn.causal = False
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, pixel_values):
        x = self.patch_embed(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


# ----------------------------------------------------------------- builders


def _image(size: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return lambda: torch.randn(1, 3, size, size, generator=g)


def build(name: str) -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    if name in ("resnet", "mobilenet_v2", "efficientnet"):
        cls = {"resnet": ResNet, "mobilenet_v2": MobileNetV2, "efficientnet": EfficientNet}[name]
        model = calibrate_batch_norm(cls(), _image(32, 1))
        return model, (_image(32, 2)(),)
    if name == "bert":
        model = init_transformer(Bert())
        ids = torch.randint(0, 100, (1, 16), generator=torch.Generator().manual_seed(3))
        mask = torch.ones(1, 16, dtype=torch.long)
        mask[0, -4:] = 0  # right padding
        return model, (ids, mask)
    if name == "gpt":
        model = init_transformer(Gpt())
        return model, (torch.randint(0, 100, (1, 16), generator=torch.Generator().manual_seed(4)),)
    if name == "vit":
        model = init_transformer(ViT())
        return model, (_image(32, 5)(),)
    raise KeyError(name)


FAMILIES = ("resnet", "mobilenet_v2", "efficientnet", "bert", "gpt", "vit")
