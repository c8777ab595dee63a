#!/usr/bin/env python3
"""Writes gpt_peer_fixture.bin: the tiny GPT in PyTorch (tests/baselines/tiny_gpt_torch.py, the
repository's own baseline: the modules the peer's GPT is made of, at small sizes) with perturbed
weights, one batch, its loss and every parameter's gradient, for test_gpt_model to compare against
(same weights in, same loss and gradients out). Needs nothing outside the repository but Debian's
python3-torch; tests/python/test_fixtures.py makes it again and compares.

Layout (little-endian): b'GPTF', int32 vocab, context, width, heads, blocks, batch, time;
uint8 tokens[batch*time], targets[batch*time]; float64 loss; float32 params[n], grads[n] in
named_parameters() order. Run with Debian's python3-torch: /usr/bin/python3 make_gpt_fixture.py
"""
import os, struct, sys
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'baselines'))
from tiny_gpt_torch import TinyGpt  # noqa: E402  (the repository's own baseline)

V, T, C, H, L, B, TIME = 256, 8, 16, 2, 2, 3, 7
torch.manual_seed(5)

model = TinyGpt(V, T, C, H, L)
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
