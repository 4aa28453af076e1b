#!/usr/bin/env python3
"""Test data for the llama2 example: random llama2.c checkpoints, a synthetic tokenizer, and the
reference outputs of an independent float64 (NumPy) implementation of llama2.c's run.c.

    python3 tools/llama2_ref.py make --out DIR

writes, deterministically, into DIR:
  tokenizer.bin             32000 pieces in run.c's format (specials, byte tokens, characters,
                            pieces each made of two earlier ones, so that BPE can reach them)
  stories15M.bin, gqa.bin   checkpoints (llama2.c legacy format) of the configs
                            (288, 768, 6, 6, 6, 32000, 256), shared classifier, and
                            (512, 1376, 4, 8, 2, -32000, 512), own classifier
  NAME.tokens, NAME.logits  32 int32 tokens (BOS, then the float64 argmax each step) and the
                            float64 logits (32 x 32000) of each step
  NAME.bf16.logits          the logits along the same tokens with the weights rounded to bf16
                            and each key and value row rounded to bf16 as the cache stores it
                            (what the binary's `-w bf16` computes, in float64 otherwise)
  NAME.greedy.txt           run.c's stdout for `-t 0 -n 40 -i "Once upon a time"`
  NAME.topp.txt, NAME.all.txt  the same with `-t 0.3 -p 0.9 -s 42` and `-t 0.3 -p 0 -s 8`
                            (seeds whose every draw lies at least 1e-4 from a token boundary)
  tokenizer_cases.txt       per case: the text's UTF-8 bytes in hex, then its run.c encoding
  bad_*.bin                 files the binary must refuse with a message
"""
import argparse
import os
import struct
import sys
import time

import numpy as np

VOCAB = 32000
CONFIGS = {  # name: (dim, hidden, layers, heads, kv_heads, vocab (negative: own classifier), seq_len)
    "stories15M": (288, 768, 6, 6, 6, 32000, 256),
    "gqa": (512, 1376, 4, 8, 2, -32000, 512),
}
PROMPT = "Once upon a time"
STEPS = 40
TEACHER_STEPS = 32
SAMPLED = {"topp": (0.3, 0.9, 42), "all": (0.3, 0.0, 8)}  # -t, -p, -s of the sampled runs


# ---- tokenizer ----

def make_vocab():
    """Pieces (bytes) and scores: specials, <0xXX>, characters, then merged pieces, best first."""
    pieces = [b"<unk>", b"\n<s>\n", b"\n</s>\n"] + [b"<0x%02X>" % i for i in range(256)]
    scores = [0.0] * len(pieces)
    singles = [b" ", b"\n"] + [bytes([c]) for c in range(33, 127)]
    singles += [c.encode() for c in "éüßïçà中文字符—😀"]
    known = set(pieces) | set(singles)
    pieces += singles
    scores += [-1e6] * len(singles)  # never a merge result: their score does not matter
    merged = []

    def add(p):
        if p not in known and len(p) <= 16:
            known.add(p)
            merged.append(p)

    words = ("the Once upon a time there was little girl named Lily She loved to play with her "
             "toys One day saw big red ball in park and happy He said you can we go home mom dog "
             "cat tree sun friend Tim very wanted help").split()
    for w in words:
        for text in (w.encode(), b" " + w.encode()):
            for end in range(2, len(text) + 1):  # every prefix: each is an earlier piece + one character
                add(text[:end])
    rng = np.random.default_rng(7)
    base = [p for p in singles if len(p) == 1 and p not in (b"\n",)]
    while len(pieces) + len(merged) < VOCAB:
        pool = merged if merged and rng.random() < 0.7 else base
        a = pool[rng.integers(len(pool))]
        b = base[rng.integers(len(base))] if rng.random() < 0.6 else merged[rng.integers(len(merged))]
        add(a + b)
    merged = merged[: VOCAB - len(pieces)]
    first = len(pieces)
    pieces += merged
    scores += [-float(first + i) for i in range(len(merged))]  # earlier merges score higher
    assert len(pieces) == VOCAB and len(set(pieces)) == VOCAB
    return pieces, scores


def write_tokenizer(path, pieces, scores):
    with open(path, "wb") as f:
        f.write(struct.pack("<i", max(len(p) for p in pieces)))
        for p, s in zip(pieces, scores):
            f.write(struct.pack("<fi", s, len(p)) + p)


def encode(pieces, scores, text):
    """run.c's encode(text, bos=1, eos=0)."""
    ids = {p: i for i, p in enumerate(pieces)}
    data = text.encode()
    tokens = [1]
    if data:
        tokens.append(ids[b" "])
    i = 0
    while i < len(data):
        n = 1
        while i + n < len(data) and n < 4 and (data[i + n] & 0xC0) == 0x80:
            n += 1
        cp = data[i:i + n]
        if cp in ids:
            tokens.append(ids[cp])
        else:
            tokens.extend(b + 3 for b in cp)
        i += n
    while True:
        best, best_id, best_at = -1e10, -1, -1
        for k in range(len(tokens) - 1):
            j = ids.get(pieces[tokens[k]] + pieces[tokens[k + 1]], -1)
            if j >= 0 and np.float32(scores[j]) > best:
                best, best_id, best_at = np.float32(scores[j]), j, k
        if best_id < 0:
            return tokens
        tokens[best_at:best_at + 2] = [best_id]


def decode(pieces, prev, token):
    piece = pieces[token]
    if prev == 1 and piece.startswith(b" "):
        piece = piece[1:]
    if len(piece) == 6 and piece.startswith(b"<0x") and piece.endswith(b">"):
        return bytes([int(piece[3:5], 16)])
    return piece


def safe(piece):
    """run.c's safe_printf: drop empty pieces and lone bytes that are neither isprint nor isspace."""
    if len(piece) == 1 and not (32 <= piece[0] <= 126 or piece[0] in b" \t\n\v\f\r"):
        return b""
    return piece


# ---- model ----

def weight_shapes(cfg):
    dim, hidden, layers, heads, kv_heads, vocab, seq_len = cfg
    hs = dim // heads
    kv = kv_heads * hs
    v = abs(vocab)
    shapes = [("emb", (v, dim)), ("rms_att", (layers, dim)), ("wq", (layers, heads * hs, dim)),
              ("wk", (layers, kv, dim)), ("wv", (layers, kv, dim)), ("wo", (layers, dim, heads * hs)),
              ("rms_ffn", (layers, dim)), ("w1", (layers, hidden, dim)), ("w2", (layers, dim, hidden)),
              ("w3", (layers, hidden, dim)), ("rms_final", (dim,)),
              ("freq_real", (seq_len * hs // 2,)), ("freq_imag", (seq_len * hs // 2,))]
    if vocab < 0:
        shapes.append(("wcls", (v, dim)))
    return shapes


def make_weights(cfg, seed):
    rng = np.random.default_rng(seed)
    w = {}
    for name, shape in weight_shapes(cfg):
        if name.startswith("rms"):
            w[name] = (1 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
        elif name.startswith("freq"):
            w[name] = np.zeros(shape, np.float32)
        elif name in ("emb", "wcls"):
            w[name] = (0.1 * rng.standard_normal(shape)).astype(np.float32)
        else:
            w[name] = (0.06 * rng.standard_normal(shape)).astype(np.float32)
    return w


def write_checkpoint(path, cfg, w):
    with open(path, "wb") as f:
        f.write(struct.pack("<7i", *cfg))
        for name, _ in weight_shapes(cfg):
            f.write(w[name].astype("<f4").tobytes())


def bf16(x):
    """x rounded to float32, then to bfloat16 (nearest, ties to even), as float64."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


class Reference:
    """run.c's forward pass in float64 (with `half`, weights and cache rows rounded to bf16)."""

    def __init__(self, cfg, w, half=False):
        self.dim, self.hidden, self.layers, self.heads, self.kv_heads, vocab, self.seq_len = cfg
        self.hs = self.dim // self.heads
        self.kv = self.kv_heads * self.hs
        self.store = bf16 if half else (lambda x: x)
        self.w = {k: self.store(v).astype(np.float64) for k, v in w.items() if not k.startswith("freq")}
        self.cls = self.w["wcls"] if vocab < 0 else self.w["emb"]
        self.kc = np.zeros((self.layers, self.seq_len, self.kv))
        self.vc = np.zeros((self.layers, self.seq_len, self.kv))

    @staticmethod
    def rmsnorm(x, g):
        return g * x / np.sqrt(np.mean(x * x) + 1e-5)

    def rope(self, v, pos):
        i = np.arange(0, v.size, 2)
        angle = pos * 10000.0 ** (-(i % self.hs) / self.hs)
        c, s = np.cos(angle), np.sin(angle)
        out = v.copy()
        out[i] = v[i] * c - v[i + 1] * s
        out[i + 1] = v[i] * s + v[i + 1] * c
        return out

    def forward(self, token, pos):
        w, hs = self.w, self.hs
        x = w["emb"][token].copy()
        for l in range(self.layers):
            xb = self.rmsnorm(x, w["rms_att"][l])
            q = self.rope(w["wq"][l] @ xb, pos)
            self.kc[l, pos] = self.store(self.rope(w["wk"][l] @ xb, pos))
            self.vc[l, pos] = self.store(w["wv"][l] @ xb)
            att = np.zeros(self.dim)
            group = self.heads // self.kv_heads
            for h in range(self.heads):
                kh = h // group
                k = self.kc[l, :pos + 1, kh * hs:(kh + 1) * hs]
                v = self.vc[l, :pos + 1, kh * hs:(kh + 1) * hs]
                s = k @ q[h * hs:(h + 1) * hs] / np.sqrt(hs)
                p = np.exp(s - s.max())
                att[h * hs:(h + 1) * hs] = (p / p.sum()) @ v
            x = x + w["wo"][l] @ att
            xb = self.rmsnorm(x, w["rms_ffn"][l])
            a, b = w["w1"][l] @ xb, w["w3"][l] @ xb
            x = x + w["w2"][l] @ (a / (1 + np.exp(-a)) * b)
        return self.cls @ self.rmsnorm(x, w["rms_final"])


def gap(logits):
    top = np.sort(logits)[-2:]
    return (top[1] - top[0]) / max(abs(top[1]), 1e-30)


def teacher_forced(cfg, w):
    ref = Reference(cfg, w)
    tokens, rows, worst = [1], [], np.inf
    for pos in range(TEACHER_STEPS):
        logits = ref.forward(tokens[pos], pos)
        rows.append(logits)
        worst = min(worst, gap(logits))
        if pos + 1 < TEACHER_STEPS:
            tokens.append(int(np.argmax(logits)))
    return np.array(tokens, np.int32), np.array(rows), worst


M64 = (1 << 64) - 1


class Sampler:
    """run.c's sampler in float32 arithmetic, with its xorshift generator."""

    def __init__(self, temperature, topp, seed):
        self.temperature, self.topp, self.state = np.float32(temperature), np.float32(topp), seed
        self.margin = np.inf  # the closest a draw came to a neighbouring token's boundary

    def random_f32(self):
        s = self.state
        s ^= s >> 12
        s ^= (s << 25) & M64
        s ^= s >> 27
        self.state = s
        return np.float32(((s * 0x2545F4914F6CDD1D) & M64) >> 32 >> 8) / np.float32(16777216.0)

    def __call__(self, logits64):
        logits = logits64.astype(np.float32)
        if self.temperature == 0:
            return int(np.argmax(logits))
        logits = logits / self.temperature
        e = np.exp(logits - logits.max())
        p = e / np.cumsum(e, dtype=np.float32)[-1]  # a sequential float32 sum, as run.c's loop
        coin = self.random_f32()
        n = p.size
        if self.topp <= 0 or self.topp >= 1:
            idx = np.arange(n)
        else:
            cutoff = (np.float32(1) - self.topp) / np.float32(n - 1)
            idx = np.nonzero(p >= cutoff)[0]
            idx = idx[np.argsort(-p[idx], kind="stable")]
            cum = np.cumsum(p[idx], dtype=np.float32)
            over = np.nonzero(cum > self.topp)[0]
            last = over[0] if over.size else idx.size - 1
            idx = idx[: last + 1]
            coin = coin * cum[last]
        cdf = np.cumsum(p[idx], dtype=np.float32)
        hit = np.nonzero(coin < cdf)[0]
        if hit.size:
            k = hit[0]
            self.margin = min(self.margin, cdf[k] - coin, coin - (cdf[k - 1] if k else 0))
        return int(idx[hit[0]] if hit.size else idx[-1])


def generate_text(cfg, w, pieces, scores, sampler):
    """run.c's generate(): its exact stdout."""
    ref = Reference(cfg, w)
    prompt = encode(pieces, scores, PROMPT)
    token, pos, out, worst = prompt[0], 0, b"", np.inf
    while pos < min(STEPS, cfg[6]):
        logits = ref.forward(token, pos)
        if pos < len(prompt) - 1:
            nxt = prompt[pos + 1]
        else:
            nxt = sampler(logits)
            worst = min(worst, gap(logits))
        pos += 1
        if nxt == 1:
            break
        out += safe(decode(pieces, token, nxt))
        token = nxt
    return out + b"\n", worst


TOKENIZER_CASES = ["", "a", "Once upon a time", " leading space", "hello\nworld", "Hi! (yes), [no]; {x}: 1+2=3?",
                   "naïve café", "中文字符", "😀", "tab\there \x01 control", "龘 is rare",
                   "Once upon a time there was a little girl named Lily. She loved to play with her toys."]


def make(out):
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    pieces, scores = make_vocab()
    write_tokenizer(os.path.join(out, "tokenizer.bin"), pieces, scores)
    with open(os.path.join(out, "tokenizer_cases.txt"), "w") as f:
        for text in TOKENIZER_CASES:
            ids = encode(pieces, scores, text)
            assert b"".join(decode(pieces, a, b) for a, b in zip(ids, ids[1:])) == text.encode()
            f.write(text.encode().hex() + "\n" + " ".join(map(str, ids)) + "\n")
    for seed, (name, cfg) in enumerate(CONFIGS.items()):
        w = make_weights(cfg, 100 + seed)
        write_checkpoint(os.path.join(out, name + ".bin"), cfg, w)
        tokens, logits, worst = teacher_forced(cfg, w)
        tokens.astype("<i4").tofile(os.path.join(out, name + ".tokens"))
        logits.astype("<f8").tofile(os.path.join(out, name + ".logits"))
        half = Reference(cfg, w, half=True)
        np.array([half.forward(int(t), pos) for pos, t in enumerate(tokens)]).astype("<f8").tofile(
            os.path.join(out, name + ".bf16.logits"))
        text, worst_greedy = generate_text(cfg, w, pieces, scores, Sampler(0, 0.9, 1))
        with open(os.path.join(out, name + ".greedy.txt"), "wb") as f:
            f.write(text)
        for label, (temperature, topp, seed) in SAMPLED.items():
            sampler = Sampler(temperature, topp, seed)
            sampled, _ = generate_text(cfg, w, pieces, scores, sampler)
            if sampler.margin < 1e-4:  # float32 probabilities may differ from these by ~1e-5
                sys.exit(f"llama2_ref.py: {name}.{label}: a draw fell {sampler.margin:.1e} from a token boundary")
            with open(os.path.join(out, f"{name}.{label}.txt"), "wb") as f:
                f.write(sampled)
        gap_min = min(worst, worst_greedy)
        print(f"{name}: smallest top-1/top-2 logit gap {gap_min:.2e} (relative); greedy text {text!r}")
        if gap_min < 1e-3:
            sys.exit(f"llama2_ref.py: {name}: the top two logits are too close ({gap_min:.1e}) for a float32 comparison")
    good = open(os.path.join(out, "stories15M.bin"), "rb").read()
    tok = open(os.path.join(out, "tokenizer.bin"), "rb").read()
    small = (64, 172, 2, 4, 4, 512, 64)
    small_floats = sum(int(np.prod(s)) for _, s in weight_shapes(small))
    bad = {
        "bad_truncated.bin": good[: len(good) // 2],
        "bad_oversized.bin": good + bytes(100),
        "bad_header.bin": good[:12],
        "bad_negative.bin": struct.pack("<7i", -288, 768, 6, 6, 6, 32000, 256),
        "bad_config.bin": struct.pack("<7i", *small) + bytes(4 * small_floats),
        "bad_nan.bin": good[: 28 + 400] + struct.pack("<f", float("nan")) + good[28 + 404 :],  # token_embedding[100]
        "bad_tokenizer_truncated.bin": tok[: 4 + 8 + 5 + 8 + 3],  # inside the second piece ("\n<s>\n")
        "bad_tokenizer_length.bin": tok[:8] + struct.pack("<i", 2000000000) + tok[12:],
        "bad_tokenizer_oversized.bin": tok + struct.pack("<fi", 0.0, 1) + b"x",  # one token more
    }
    for name, data in bad.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"llama2_ref.py: wrote {out} in {time.time() - t0:.1f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["make"])
    ap.add_argument("--out", required=True)
    make(ap.parse_args().out)


if __name__ == "__main__":
    main()
