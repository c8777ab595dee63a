"""Precision Lab's own PyTorch baseline of the tiny GPT (the model core/gpt/gpt_model.h builds):
pre-LayerNorm blocks of causal self-attention and a tanh-GELU MLP, token and position embeddings,
a final LayerNorm and a linear head. Written for this repository's fixtures (make_gpt_fixture.py),
so that they can be made again from the repository alone with Debian's python3-torch."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads, context):
        super().__init__()
        self.width, self.heads = width, heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        mask = torch.tril(torch.ones(context, context)).view(1, 1, context, context)
        self.register_buffer('mask', mask)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(self.width, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float('-inf')).softmax(dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate='tanh'))


class TinyGpt(nn.Module):
    def __init__(self, vocab, context, width, heads, blocks):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, context) for _ in range(blocks))
        self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))
