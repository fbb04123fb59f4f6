#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Golden lines of tests/golden/gguf_fixtures.jsonl, from a minimal GGUF reader that shares no
code with Synapse (the point of the golden file: an independent reading of every fixture).

    scripts/gguf_golden.py FIXTURES_DIR REL_PATH...     one JSON line per file, to stdout
    scripts/gguf_golden.py --check FIXTURES_DIR          compare with every line of the golden file

A new fixture needs its line: gguf_fixtures_test's NoFixtureIsLeftUntested fails without it.
"""
import json
import os
import struct
import sys

# ggml type ids -> (name, block elements, block bytes)
TYPES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    20: ("IQ4_NL", 32, 18), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 30: ("BF16", 1, 2),
}
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
           11: "<q", 12: "<d"}
HPARAMS = [("embedding_length", "embedding_length"), ("block_count", "block_count"),
           ("head_count", "attention.head_count"), ("head_count_kv", "attention.head_count_kv"),
           ("feed_forward_length", "feed_forward_length"), ("context_length", "context_length")]


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        value = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(fmt)
        return value

    def string(self):
        n = self.take("<Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def value(self, kind):
        if kind == 8:
            return self.string()
        if kind == 9:
            item, count = self.take("<I"), self.take("<Q")
            return [self.value(item) for _ in range(count)]
        return self.take(SCALARS[kind])


def golden_line(root, rel):
    with open(os.path.join(root, rel), "rb") as f:
        data = f.read()
    r = Reader(data)
    assert data[:4] == b"GGUF", rel
    r.pos = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        kv[key] = r.value(r.take("<I"))
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        kind, offset = r.take("<I"), r.take("<Q")
        tensors.append((name, dims, kind, offset))
    data_bytes = 0  # the tensors' own bytes, without the alignment padding between them
    for _, dims, kind, _ in tensors:
        _, block, size = TYPES[kind]
        elements = 1
        for d in dims:
            elements *= d
        data_bytes += elements // block * size
    arch = kv.get("general.architecture", "")
    line = {"file": rel, "version": version, "architecture": arch, "tensor_count": n_tensors,
            "kv_count": n_kv}
    if "tokenizer.ggml.tokens" in kv:
        line["vocab_tokens"] = len(kv["tokenizer.ggml.tokens"])
        line["tokenizer_model"] = kv["tokenizer.ggml.model"]
    for field, suffix in HPARAMS:
        value = kv.get(arch + "." + suffix)
        if isinstance(value, int):  # per-layer arrays are not a single hyper-parameter
            line[field] = value
    line["tensor_data_bytes"] = data_bytes
    for which, t in (("first_tensor", tensors[:1]), ("last_tensor", tensors[-1:])):
        for name, dims, kind, _ in t:
            line[which] = {"name": name, "type": TYPES[kind][0], "shape": dims}
    return line


def main(argv):
    if len(argv) >= 2 and argv[0] == "--check":
        root = argv[1]
        golden = os.path.join(os.path.dirname(__file__), "..", "tests", "golden",
                              "gguf_fixtures.jsonl")
        bad = 0
        for text in open(golden):
            expected = json.loads(text)
            if "_comment" in expected:
                continue
            got = golden_line(root, expected["file"])
            if got != expected:
                bad += 1
                print("differs:", expected["file"], file=sys.stderr)
        print("%d differ" % bad)
        return 1 if bad else 0
    root = argv[0]
    for rel in argv[1:]:
        print(json.dumps(golden_line(root, rel)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
