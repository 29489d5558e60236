#!/usr/bin/env python3
"""Writes tiny-qwen3.gguf, an independent (Python, from ggml docs/gguf.md) GGUF v3 writer's file
for the reader's CLI tests: a 2-layer qwen3 with hidden 256, mixed tensor types, and
general.alignment 64. Tensor bytes are a fixed pattern; only the layout matters.
Run: python3 make_tiny.py  (writes next to this script)."""
import os
import struct

ALIGN = 64
TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144),
         "Q6_K": (14, 256, 210), "BF16": (30, 1, 2)}


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv_u32(k, v):
    return s(k) + struct.pack("<II", 4, v)


def kv_f32(k, v):
    return s(k) + struct.pack("<If", 6, v)


def kv_str(k, v):
    return s(k) + struct.pack("<I", 8) + s(v)


def kv_strs(k, vs):
    return s(k) + struct.pack("<IIQ", 9, 8, len(vs)) + b"".join(s(v) for v in vs)


hidden, layers, heads, kv_heads, head_dim, ff, vocab = 256, 2, 4, 2, 64, 512, 32
kvs = [kv_str("general.architecture", "qwen3"), kv_str("general.name", "tiny"),
       kv_u32("general.alignment", ALIGN), kv_u32("general.file_type", 15),
       kv_u32("qwen3.block_count", layers), kv_u32("qwen3.context_length", 4096),
       kv_u32("qwen3.embedding_length", hidden), kv_u32("qwen3.feed_forward_length", ff),
       kv_u32("qwen3.attention.head_count", heads), kv_u32("qwen3.attention.head_count_kv", kv_heads),
       kv_u32("qwen3.attention.key_length", head_dim), kv_f32("qwen3.rope.freq_base", 1000000.0),
       kv_f32("qwen3.attention.layer_norm_rms_epsilon", 1e-6),
       kv_strs("tokenizer.ggml.tokens", ["t%d" % i for i in range(vocab)])]
tensors = [("token_embd.weight", [hidden, vocab], "Q6_K")]
for l in range(layers):
    p = "blk.%d." % l
    tensors += [(p + "attn_norm.weight", [hidden], "F32"), (p + "attn_q.weight", [hidden, heads * head_dim], "Q4_K"),
                (p + "attn_k.weight", [hidden, kv_heads * head_dim], "Q4_K"),
                (p + "attn_v.weight", [hidden, kv_heads * head_dim], "Q6_K"),
                (p + "attn_output.weight", [heads * head_dim, hidden], "Q4_K"),
                (p + "attn_q_norm.weight", [head_dim], "F32"), (p + "attn_k_norm.weight", [head_dim], "F32"),
                (p + "ffn_norm.weight", [hidden], "F32"), (p + "ffn_gate.weight", [hidden, ff], "Q4_K"),
                (p + "ffn_up.weight", [hidden, ff], "Q4_K"), (p + "ffn_down.weight", [ff, hidden], "Q8_0")]
tensors += [("output_norm.weight", [hidden], "F32"), ("output.weight", [hidden, vocab], "BF16")]

infos, datas, off = b"", [], 0
for name, shape, t in tensors:
    tid, blk, bb = TYPES[t]
    n = 1
    for d in shape:
        n *= d
    size = n // blk * bb
    infos += s(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
    infos += struct.pack("<IQ", tid, off)
    datas.append(bytes((i * 7 + len(name)) & 0xFF for i in range(size)))
    off = (off + size + ALIGN - 1) // ALIGN * ALIGN

head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
head += b"\0" * ((-len(head)) % ALIGN)
body = b""
for d in datas:
    body += d + b"\0" * ((-len(d)) % ALIGN)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny-qwen3.gguf"), "wb") as f:
    f.write(head + body)

# tiny-qwen3moe.gguf: the fuzz corpus's MoE seed (issue 15), small enough for -max_len 8192 so that
# mutations reach the MoE keys and tensors: one layer, hidden 16, 4 experts of 8, 2 active, F16.
h, e, used, eff, v, hd = 16, 4, 2, 8, 8, 8
kvs = [kv_str("general.architecture", "qwen3moe"), kv_u32("general.alignment", ALIGN),
       kv_u32("qwen3moe.block_count", 1), kv_u32("qwen3moe.context_length", 256),
       kv_u32("qwen3moe.embedding_length", h), kv_u32("qwen3moe.attention.head_count", 2),
       kv_u32("qwen3moe.attention.head_count_kv", 1), kv_u32("qwen3moe.attention.key_length", hd),
       kv_u32("qwen3moe.expert_count", e), kv_u32("qwen3moe.expert_used_count", used),
       kv_u32("qwen3moe.expert_feed_forward_length", eff), kv_f32("qwen3moe.rope.freq_base", 1000000.0)]
p = "blk.0."
tensors = [("token_embd.weight", [h, v], "F32"), (p + "attn_norm.weight", [h], "F32"),
           (p + "attn_q.weight", [h, 2 * hd], "F32"), (p + "attn_k.weight", [h, hd], "F32"),
           (p + "attn_v.weight", [h, hd], "F32"), (p + "attn_output.weight", [2 * hd, h], "F32"),
           (p + "attn_q_norm.weight", [hd], "F32"), (p + "attn_k_norm.weight", [hd], "F32"),
           (p + "ffn_norm.weight", [h], "F32"), (p + "ffn_gate_inp.weight", [h, e], "F32"),
           (p + "ffn_gate_exps.weight", [h, eff, e], "F32"), (p + "ffn_up_exps.weight", [h, eff, e], "F32"),
           (p + "ffn_down_exps.weight", [eff, h, e], "F32"), ("output_norm.weight", [h], "F32")]
infos, datas, off = b"", [], 0
for name, shape, t in tensors:
    n = 1
    for d in shape:
        n *= d
    infos += s(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
    tid, width = (0, 4) if len(shape) == 1 else (1, 2)  # norms F32, matrices F16
    infos += struct.pack("<IQ", tid, off)
    datas.append(b"\0" * (n * width))
    off = (off + n * width + ALIGN - 1) // ALIGN * ALIGN
head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + infos
head += b"\0" * ((-len(head)) % ALIGN)
body = b"".join(d + b"\0" * ((-len(d)) % ALIGN) for d in datas)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "tiny-qwen3moe.gguf"), "wb") as f:
    f.write(head + body)
