#!/usr/bin/env python3
"""Writes gpt_peer_fixture.bin: the PyTorch peer's tiny GPT (../shared/peers/gpt_torch.py, the same
modules at small sizes) with perturbed weights, one batch, its loss and every parameter's gradient,
for test_gpt_model to compare against (same weights in, same loss and gradients out).

Layout (little-endian): b'GPTF', int32 vocab, context, width, heads, blocks, batch, time;
uint8 tokens[batch*time], targets[batch*time]; float64 loss; float32 params[n], grads[n] in
named_parameters() order. Run with Debian's python3-torch: /usr/bin/python3 make_gpt_fixture.py
"""
import math, struct, sys
import torch
import torch.nn as nn
import torch.nn.functional as F

V, T, C, H, L, B, TIME = 256, 8, 16, 2, 2, 3, 7
torch.manual_seed(5)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.out = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.register_buffer('mask', torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (z.view(b, t, H, c // H).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // H)
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float('-inf')).softmax(dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate='tanh'))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.ln, self.head = nn.LayerNorm(C), nn.Linear(C, V)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


model = GPT()
with torch.no_grad():  # larger than the peer's init so that every path carries a signal
    for name, p in model.named_parameters():
        p.copy_(torch.randn_like(p) * (0.3 if p.dim() == 2 else 0.1) + (1.0 if name.endswith('ln1.weight') or name.endswith('ln2.weight') or name == 'ln.weight' else 0.0))
tokens = torch.randint(V, (B, TIME))
targets = torch.randint(V, (B, TIME))
loss = F.cross_entropy(model(tokens).view(-1, V), targets.view(-1))
loss.backward()
params = torch.cat([p.detach().flatten() for p in model.parameters()])
grads = torch.cat([p.grad.flatten() for p in model.parameters()])
with open(sys.argv[1] if len(sys.argv) > 1 else 'gpt_peer_fixture.bin', 'wb') as f:
    f.write(b'GPTF' + struct.pack('<7i', V, T, C, H, L, B, TIME))
    f.write(bytes(tokens.flatten().tolist()) + bytes(targets.flatten().tolist()))
    f.write(struct.pack('<d', loss.item()))
    f.write(params.numpy().astype('<f4').tobytes() + grads.numpy().astype('<f4').tobytes())
print(f'{params.numel()} parameters, loss {loss.item():.6f}')
