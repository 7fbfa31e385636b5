"""Writes a results.json of many scenario executions for the report memory test.

usage: gen_results.py TEMPLATE OUT (--count N | --max-bytes B)

TEMPLATE is a results.json written by `syncroll run`; its scenario executions are repeated
(each copy a new repeat number and start time, one in seven failing with checks) until OUT
holds N executions, or as many as fit in B bytes. Written compactly, as many executions as
possible per byte: the loader's worst case.
"""
import json
import sys


def main():
    tpl_path, out_path, mode, value = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(tpl_path) as f:
        doc = json.load(f)
    tpl = doc["scenarios"]
    head = dict(doc)
    head["scenarios"] = []
    text = json.dumps(head, separators=(",", ":"))
    assert text.endswith('"scenarios":[]}')
    prefix, suffix = text[:-2], "]}\n"
    budget = value if mode == "--max-bytes" else None
    count = value if mode == "--count" else None
    written, n = len(prefix) + len(suffix), 0
    with open(out_path, "w") as f:
        f.write(prefix)
        while count is None or n < count:
            s = dict(tpl[n % len(tpl)])
            s["repeat"] = n + 1
            s["start_ms"] = float(n)
            if n % 7 == 3:
                s["verdict"] = "fail"
                s["reason"] = "trace.row_mismatch fired (execution %d)" % n
                s["fired"] = {"trace.row_mismatch": 2}
                s["checks"] = [{"name": "trace.row_mismatch", "classification": "off_by_one",
                                "message": "sample %d turn 1 row %d: expected expert 3, got 4"
                                % (i, n), "expected": False,
                                "where": {"step": 0, "engine": 0, "sample": i, "turn": 1,
                                          "row": n % 100, "layer": 0}} for i in range(2)]
            piece = ("," if n else "") + json.dumps(s, separators=(",", ":"))
            if budget is not None and written + len(piece) > budget:
                break
            f.write(piece)
            written += len(piece)
            n += 1
        f.write(suffix)
    print(n)


if __name__ == "__main__":
    main()
