# SPDX-License-Identifier: Apache-2.0
"""A small causal transformer language model (torch.nn.TransformerEncoder
with a causal mask, pre-norm, tied embeddings) trained on synthetic tokens,
as a user would write it (no mlOS code): 4 layers, d_model 256, 4 heads,
feed-forward 1024, vocabulary 8192, sequence 256, batch 8, AdamW.

    python train_transformer.py [--seconds S]"""
import argparse

import torch
from torch import nn

from timed_steps import parse_args, run, training_step


class LanguageModel(nn.Module):
    def __init__(self, vocab, d_model, heads, layers, ff, seq):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.position = nn.Parameter(torch.zeros(seq, d_model))
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.1, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, tokens):
        h = self.embed(tokens) + self.position[: tokens.shape[1]]
        h = self.blocks(h, mask=self.mask, is_causal=True)
        return self.norm(h) @ self.embed.weight.T


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    a = parse_args(ap, warmup=3.0, seconds=10.0)
    vocab = 8192
    net = LanguageModel(vocab, 256, 4, 4, 1024, a.seq)
    opt = torch.optim.AdamW(net.parameters(), lr=3e-4)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, vocab, (a.batch, a.seq + 1), generator=g)
    def loss():
        logits = net(tokens[:, :-1])
        return loss_fn(logits.reshape(-1, vocab), tokens[:, 1:].reshape(-1))

    run(training_step(opt, loss), a.batch, a.warmup, a.seconds)


if __name__ == "__main__":
    main()
