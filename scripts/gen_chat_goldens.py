#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/golden/chat/expected.json: every chat template in tests/golden/chat/cases.json
rendered over every conversation in conversations.json by Jinja2 (3.1), set up the way Hugging
Face's apply_chat_template sets it up (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, HF's tojson, raise_exception, strftime_now with a fixed clock). The golden test
(tests/chat_golden_test.cc) renders the same with src/chat and compares byte for byte.

Needs python3 with jinja2 (not in CI; run locally after changing templates or conversations):
    python3 scripts/gen_chat_goldens.py [--fixtures DIR]
Fixture templates are read from the GGUF files' tokenizer.chat_template (default fixtures folder:
$SYNAPSE_FIXTURES or ../shared/fixtures beside the project root).
"""
import argparse
import datetime
import json
import os
import struct
import sys

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden", "chat")
# The fixed clock of the golden test (kGoldenNow): 2024-07-26 12:00:00 UTC.
NOW = datetime.datetime(2024, 7, 26, 12, 0, 0, tzinfo=datetime.timezone.utc)


def gguf_string(path, wanted):
    """The string value of one metadata key of a GGUF file (a minimal reader)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    off = 8
    _, n_kv = struct.unpack_from("<QQ", data, off)
    off += 16
    fixed = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def read_str():
        nonlocal off
        (n,) = struct.unpack_from("<Q", data, off)
        off += 8
        s = data[off:off + n]
        off += n
        return s.decode("utf-8")

    def skip(kind):
        nonlocal off
        if kind == 8:
            read_str()
        elif kind == 9:
            elem, count = struct.unpack_from("<IQ", data, off)
            off += 12
            for _ in range(count):
                skip(elem)
        else:
            off += fixed[kind]

    for _ in range(n_kv):
        key = read_str()
        (kind,) = struct.unpack_from("<I", data, off)
        off += 4
        if key == wanted and kind == 8:
            return read_str()
        skip(kind)
    raise KeyError(f"{path}: no string {wanted}")


def make_env():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return NOW.strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def message_dict(m):
    """A message as src/chat's message_value() shows it to templates."""
    out = {"role": m["role"], "content": m.get("content")}
    calls = m.get("tool_calls") or []
    if calls:
        out_calls = []
        for c in calls:
            args = c["function"]["arguments"]
            try:
                parsed = json.loads(args)
                if isinstance(parsed, dict):
                    args = parsed
            except ValueError:
                pass
            entry = {}
            if c.get("id"):
                entry["id"] = c["id"]
            entry["type"] = "function"
            entry["function"] = {"name": c["function"]["name"], "arguments": args}
            out_calls.append(entry)
        out["tool_calls"] = out_calls
    if m.get("tool_call_id"):
        out["tool_call_id"] = m["tool_call_id"]
    if m.get("name"):
        out["name"] = m["name"]
    return out


def template_source(case, fixtures):
    kind, _, ref = case["source"].partition(":")
    if kind == "builtin":
        path = os.path.join(ROOT, "src", "chat", "templates", ref + ".jinja")
    elif kind == "file":
        path = os.path.join(GOLDEN, ref)
    elif kind == "fixture":
        return gguf_string(os.path.join(fixtures, ref), "tokenizer.chat_template")
    else:
        raise ValueError(case["source"])
    with open(path, encoding="utf-8") as f:
        return f.read()


def main():
    parser = argparse.ArgumentParser()
    default_fixtures = os.environ.get("SYNAPSE_FIXTURES",
                                      os.path.join(ROOT, "..", "shared", "fixtures"))
    parser.add_argument("--fixtures", default=default_fixtures)
    args = parser.parse_args()

    with open(os.path.join(GOLDEN, "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)
    with open(os.path.join(GOLDEN, "conversations.json"), encoding="utf-8") as f:
        conversations = json.load(f)
    env = make_env()
    expected = {}
    for case in cases:
        template = env.from_string(template_source(case, args.fixtures))
        results = {}
        for conv in conversations:
            variables = {
                "messages": [message_dict(m) for m in conv["messages"]],
                "tools": conv.get("tools"),
                "documents": None,
                "add_generation_prompt": conv["add_generation_prompt"],
                "bos_token": case.get("bos_token", "<s>"),
                "eos_token": case.get("eos_token", "</s>"),
            }
            variables.update(conv.get("extra", {}))
            try:
                results[conv["name"]] = {"output": template.render(**variables)}
            except jinja2.exceptions.TemplateError as e:
                kind = "raised" if type(e) is jinja2.exceptions.TemplateError else "error"
                results[conv["name"]] = {kind: str(e)}
            except Exception as e:  # noqa: BLE001 - a template error of any Python type
                results[conv["name"]] = {"error": f"{type(e).__name__}: {e}"}
        expected[case["name"]] = results
    with open(os.path.join(GOLDEN, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(expected, f, ensure_ascii=False, indent=1)
        f.write("\n")
    n = sum(len(r) for r in expected.values())
    print(f"wrote {n} expected renders of {len(cases)} templates", file=sys.stderr)


if __name__ == "__main__":
    main()
