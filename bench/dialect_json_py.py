#!/usr/bin/env python3
"""The vllm-json baseline of bench_dialects: json.loads of the body, then np.asarray of
prompt_routed_experts and choices[0].routed_experts (what a vLLM 0.21 client does), timed
`reps` times. Prints `bench: pyjson.vllm-json median_ms=.. min_ms=.. max_ms=..`.

Usage: dialect_json_py.py BODY REPS"""
import json
import statistics
import sys
import time

import numpy as np


def main():
    data = open(sys.argv[1], "rb").read()
    reps = int(sys.argv[2])
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        doc = json.loads(data)
        p = np.asarray(doc["prompt_routed_experts"], dtype=np.int32)
        g = np.asarray(doc["choices"][0]["routed_experts"], dtype=np.int32)
        times.append((time.perf_counter() - t0) * 1e3)
        assert p.ndim == 3 and g.ndim == 3
    print("bench: pyjson.vllm-json median_ms=%.3f min_ms=%.3f max_ms=%.3f"
          % (statistics.median(times), min(times), max(times)))


if __name__ == "__main__":
    main()
