"""The model zoo of `npm run bench:profile` (issue #17): five training steps people actually run, each a
`train_step(model, optimizer, inputs, targets)` and a setup function returning its arguments.

Sizes are chosen so that a step takes tens of milliseconds on a small CPU VM (the benchmark runs each
model ~30 times per torch version), while the op mix is the model's own: per-op overhead shows up in the
ratio exactly as on the full-size model with smaller kernels. Nothing is downloaded: GPT-2 is built from a
config with random weights, ResNet-18 is defined here (torchvision's layout, no torchvision needed).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def train_step(model, optimizer, inputs, targets, loss_kind):
    optimizer.zero_grad(set_to_none=True)
    if loss_kind == "hf":
        loss = model(inputs, labels=targets).loss
    else:
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss


# ---------------------------------------------------------------- nanoGPT-style, 4 layers, d=512

class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, block)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))
        return x


class GPT(nn.Module):
    def __init__(self, vocab=1024, block=64, layers=4, d=512, heads=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.h = nn.ModuleList([Block(d, heads, block) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def gpt_inputs(batch=2, block=64, vocab=1024):
    torch.manual_seed(0)
    model = GPT(vocab=vocab, block=block)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    idx = torch.randint(0, vocab, (batch, block + 1))
    return model, optimizer, idx[:, :-1].contiguous(), idx[:, 1:].contiguous(), "lm"


# ---------------------------------------------------------------- Hugging Face GPT-2 (config, random init)

def hf_gpt2_inputs(batch=2, block=64):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=1024, n_positions=block, n_embd=256, n_layer=4, n_head=4,
                        bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    idx = torch.randint(0, 1024, (batch, block))
    return model, optimizer, idx, idx, "hf"


# ---------------------------------------------------------------- ResNet-18 (torchvision's layout)

class BasicBlock(nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, inplanes = [], 64
        for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(inplanes, planes, stride), BasicBlock(planes, planes)))
            inplanes = planes
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18_inputs(batch=4, size=64):
    torch.manual_seed(0)
    model = ResNet18()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer, torch.randn(batch, 3, size, size), torch.randint(0, 10, (batch,)), "cls"


# ---------------------------------------------------------------- LSTM language model, 2 x 512

class LSTMLM(nn.Module):
    def __init__(self, vocab=1000, d=512, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, d, layers, batch_first=True)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        out, _ = self.lstm(self.embed(idx))
        return self.head(out)


def lstm_inputs(batch=8, length=32, vocab=1000):
    torch.manual_seed(0)
    model = LSTMLM(vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    idx = torch.randint(0, vocab, (batch, length + 1))
    return model, optimizer, idx[:, :-1].contiguous(), idx[:, 1:].contiguous(), "lm"


# ---------------------------------------------------------------- 40 x Linear(32, 32) + Adam: tiny ops

def tiny_inputs(batch=32, width=32, depth=40):
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    return model, optimizer, torch.randn(batch, width), torch.randint(0, width, (batch,)), "cls"


MODELS = {
    "nanogpt": ("nanoGPT-style, 4 layers, d=512", gpt_inputs),
    "hf-gpt2": ("Hugging Face GPT-2 (config, random init)", hf_gpt2_inputs),
    "resnet18": ("ResNet-18", resnet18_inputs),
    "lstm": ("LSTM LM 2x512", lstm_inputs),
    "tiny": ("40 x Linear(32,32) + Adam", tiny_inputs),
}
