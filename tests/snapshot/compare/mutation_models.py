"""Small models the mutation corpus changes one line at a time (test_mutations.py).

Each `build_*` returns (model, inputs), seeded. A mutation replaces one
snippet of this file's text (it must occur exactly once), and the harness
imports the changed text as a module of its own: the model code a user
edits, compiled as a user's would be.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def seeded() -> None:
    torch.manual_seed(0)


def two_inputs(x, y):
    z = torch.relu(x - y)
    w = torch.mm(z, y)
    return w.sum(0, keepdim=True) * 1.5


def build_two_inputs():
    seeded()
    return two_inputs, (torch.randn(4, 4), torch.randn(4, 4))


def slices(x):
    a = x[:, 0:4]
    b = x[:, ::2] - x[:, 1::2]
    c = x.narrow(1, 0, 4)
    return (a * b + c).view(2, 8)


def build_slices():
    seeded()
    return slices, (torch.randn(4, 8),)


def reductions(x):
    a = x.amax(dim=0)
    b = torch.cumsum(x, 0)
    c = torch.flip(x, [0])
    d = torch.roll(x, 1, 0)
    e = F.softmax(x, dim=-1)
    return a + (b * c + d - e).clamp(min=0.0).pow(2).sum(1)


def build_reductions():
    seeded()
    return reductions, (torch.randn(4, 4),)


def combine(x, y):
    c = torch.cat([x, y], 0)
    s = torch.stack([x, y], 0)
    m = torch.where(x > 0, x, y)
    k = x.masked_fill(y > 0.5, 0.0)
    return c.sum() + s[0] * s[1] + m + k + x.chunk(2, dim=1)[0].sum()


def build_combine():
    seeded()
    return combine, (torch.randn(4, 4), torch.randn(4, 4))


def matmuls(b, x, w):
    h = torch.addmm(b, x, w, alpha=2.0)
    g = x @ w.t()
    return F.gelu(h) + g.transpose(0, 1)


def build_matmuls():
    seeded()
    return matmuls, (torch.randn(4), torch.randn(4, 4), torch.randn(4, 4))


class TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 8)
        self.fc2 = nn.Linear(8, 8)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        return self.fc2(h) + x


def build_two_layers():
    seeded()
    return TwoLayers(), (torch.randn(2, 8),)


def build_two_layers_eval():
    seeded()
    return TwoLayers().eval(), (torch.randn(2, 8),)


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.out = nn.Linear(8, 8)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) * 0.5
        attn = scores.softmax(dim=-1)
        mixed = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(attn @ v + mixed)


def build_attention():
    seeded()
    return Attention(), (torch.randn(2, 4, 8),)


class Norms(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8), nn.GELU()) for _ in range(3)
        )
        self.layers[1][0].eps = 1e-5

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


def build_norms():
    seeded()
    return Norms().eval(), (torch.randn(2, 8),)


class Configured(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mode = "fast # v1"
        self.scale = 2
        self.register_buffer("running", torch.zeros(4))

    def forward(self, x):
        self.running.mul_(0.9).add_(x.mean(0))
        if self.mode.startswith("fast"):
            return x * self.scale + self.running
        return x * self.scale


def build_configured():
    seeded()
    return Configured(), (torch.randn(3, 4),)


class Renamed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.gate = nn.Linear(4, 4)

    def forward(self, x, y):
        hidden = self.proj(x)
        gated = torch.sigmoid(self.gate(y))
        return helper(hidden, gated)


def helper(a, b):
    return a * b + F.layer_norm(a, (4,), weight=None, bias=None, eps=1e-5)


def build_renamed():
    seeded()
    return Renamed(), (torch.randn(2, 4), torch.randn(2, 4))
