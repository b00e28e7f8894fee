#!/usr/bin/env python3
"""Reference all-mpnet-base-v2 sentence vectors in numpy, written from
Hugging Face's modeling_mpnet (MPNetModel) and sentence-transformers'
mean pooling; tokenized by the `tokenizers` library from tokenizer.json.
Made fixtures/embeddings/mpnet-reference.json (the Rust encoder is checked
against it in crates/embed/tests/it/models.rs). Needs numpy and tokenizers.
Usage: mpnet_reference.py MODEL_DIR TEXT... -> JSON lines {text, ids, vector}
"""
import json, math, struct, sys
import numpy as np
from tokenizers import Tokenizer

folder = sys.argv[1]
f = open(folder + "/model.safetensors", "rb")
n = struct.unpack("<Q", f.read(8))[0]
header = json.loads(f.read(n))
data = f.read()
def t(name):
    h = header[name]
    a, b = h["data_offsets"]
    assert h["dtype"] == "F32"
    return np.frombuffer(data[a:b], dtype=np.float32).reshape(h["shape"]).astype(np.float64)

cfg = json.load(open(folder + "/config.json"))
H, heads, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["layer_norm_eps"]
pad = cfg["pad_token_id"]

def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b

def gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))

def bucket(rel, num_buckets=32, max_distance=128):
    ret = 0
    n = -rel
    num_buckets //= 2
    ret += (n < 0) * num_buckets
    n = abs(n)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    # torch computes this in float32
    v = np.float32(np.log(np.float32(n) / np.float32(max_exact))) / np.float32(math.log(max_distance / max_exact)) * np.float32(num_buckets - max_exact)
    v = max_exact + int(np.float32(v))
    return ret + min(v, num_buckets - 1)

tok = Tokenizer.from_file(folder + "/tokenizer.json")
tok.no_truncation(); tok.no_padding()
rel_bias = t("encoder.relative_attention_bias.weight")  # [32, heads]
for text in sys.argv[2:]:
    ids = tok.encode(text).ids
    if len(ids) > 384:  # sentence-transformers truncates the text, keeping </s>
        ids = ids[:383] + ids[-1:]
    L = len(ids)
    pos = np.arange(L) + pad + 1
    x = t("embeddings.word_embeddings.weight")[ids] + t("embeddings.position_embeddings.weight")[pos]
    x = layer_norm(x, t("embeddings.LayerNorm.weight"), t("embeddings.LayerNorm.bias"))
    rp = np.array([[bucket(j - i) for j in range(L)] for i in range(L)])
    bias = rel_bias[rp].transpose(2, 0, 1)  # heads, L, L
    d = H // heads
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        lin = lambda name, v: v @ t(p + name + ".weight").T + t(p + name + ".bias")
        q = lin("attention.attn.q", x).reshape(L, heads, d).transpose(1, 0, 2)
        k = lin("attention.attn.k", x).reshape(L, heads, d).transpose(1, 0, 2)
        v = lin("attention.attn.v", x).reshape(L, heads, d).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d) + bias
        s = np.exp(s - s.max(-1, keepdims=True)); s /= s.sum(-1, keepdims=True)
        c = (s @ v).transpose(1, 0, 2).reshape(L, H)
        x = layer_norm(lin("attention.attn.o", c) + x, t(p + "attention.LayerNorm.weight"), t(p + "attention.LayerNorm.bias"))
        inner = gelu(lin("intermediate.dense", x))
        x = layer_norm(lin("output.dense", inner) + x, t(p + "output.LayerNorm.weight"), t(p + "output.LayerNorm.bias"))
    mean = x.mean(0)
    mean /= np.linalg.norm(mean)
    print(json.dumps({"text": text, "ids": ids, "vector": [round(float(z), 6) for z in mean]}))
