#!/usr/bin/env python3
"""Check a `vramtrace diff --json` of the GAN trainer's --retain-history run
(before) against the fixed run (after): the largest change must be a call
site whose stack passes through FUNCTION (default bn_block_forward), shrinking
(growth per iteration and bytes at the peak lower after the fix).

usage: diff_check.py DIFF.json [FUNCTION]   exit 0 ok, 1 the claim fails."""
import json
import sys


def main():
    d = json.load(open(sys.argv[1]))
    want = sys.argv[2] if len(sys.argv) > 2 else "bn_block_forward"
    errors = []
    if d.get("format") != "vramtrace-diff":
        errors.append(f"format is {d.get('format')!r}")
    sites = [s for s in d.get("sites", []) if s["change"] > 0]
    if not sites:
        errors.append("no call site changed")
    else:
        top = sites[0]
        funcs = [f["function"] for f in top["stack"]]
        if want not in funcs:
            errors.append(f"largest change is not {want}'s site: {' <- '.join(funcs[:7])}")
        if not top["growth_bytes_per_iteration"]["delta"] < 0:
            errors.append(f"its growth did not drop: {top['growth_bytes_per_iteration']}")
        if not top["peak"]["delta"] < 0:
            errors.append(f"its bytes at the peak did not drop: {top['peak']}")
        if any(s["change"] > top["change"] for s in sites):
            errors.append("sites are not sorted by change")
    t = d.get("totals", {})
    if not t.get("peak_allocated", {}).get("delta", 0) < 0:
        errors.append(f"peak did not drop: {t.get('peak_allocated')}")
    for e in errors:
        print("diff_check: " + e)
    if not errors:
        f = [x["function"] for x in sites[0]["stack"]]
        print(f"diff_check: ok: largest change {sites[0]['change']} B at {' <- '.join(f[:6])}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
