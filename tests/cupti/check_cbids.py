#!/usr/bin/env python3
"""Hold cupti/vtcupti.c's watched callback ids against the preload's hook
lists (interpose/vti_internal.h, VTI_RUNTIME_HOOKS and VTI_DRIVER_HOOKS):
every hook that allocates or frees must have its CUPTI callback id watched,
or CUPTI's activity records of the hooked calls are counted a second time.
The two lists cannot be one (a callback id's name carries the CUDA version
that introduced it), so this test keeps them together.

usage: check_cbids.py REPO [--extra-hook NAME]
--extra-hook adds a hook to the list, to show the check failing.
Exit 0: every memory hook is watched; 1: some are not (named); 2: unusable input.
"""
import argparse
import os
import re
import sys

# Hooks that neither allocate nor free: no memory activity record to drop.
NOT_MEMORY = {
    "cudaMemGetInfo", "cudaSetDevice", "cudaDeviceReset", "cuMemGetInfo_v2",
    "cuDevicePrimaryCtxReset", "cuDevicePrimaryCtxReset_v2", "cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxRelease_v2", "cuCtxDestroy", "cuCtxDestroy_v2",
    "cuMemRetainAllocationHandle", "cuStreamBeginCapture", "cuStreamBeginCapture_ptsz",
    "cuStreamBeginCapture_v2", "cuStreamBeginCapture_v2_ptsz", "cuStreamBeginCaptureToGraph",
    "cuStreamBeginCaptureToGraph_ptsz", "cuStreamEndCapture", "cuStreamEndCapture_ptsz",
    "cuMemPoolCreate", "cuMemPoolDestroy", "cuCtxSetCurrent", "cuCtxPushCurrent",
    "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent", "cuCtxPopCurrent_v2", "cuCtxCreate", "cuCtxCreate_v2", "cuCtxCreate_v3",
    "cuCtxCreate_v4",
}


def hooks(text):
    """The names of VTI_RUNTIME_HOOKS and VTI_DRIVER_HOOKS."""
    names = []
    for lst in ("VTI_RUNTIME_HOOKS", "VTI_DRIVER_HOOKS"):
        m = re.search(r"#define " + lst + r"\(X\)((?:[^\n]*\\\n)*[^\n]*)", text)
        if not m:
            raise ValueError(f"no {lst} in vti_internal.h")
        names += re.findall(r"X\((\w+)\)", m.group(1))
    return names


def cbids(text):
    """The API names of the watched callback ids: CUPTI_RUNTIME_TRACE_CBID_
    cudaMalloc_v3020 is cudaMalloc; a driver id keeps its ABI suffix
    (cuMemAlloc_v2), which the hooks' names carry too."""
    out = set()
    for dom, name in re.findall(r"CUPTI_(RUNTIME|DRIVER)_TRACE_CBID_(\w+)", text):
        if dom == "RUNTIME":
            name = re.sub(r"_v\d{4,5}$", "", name)
        out.add(name)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo")
    ap.add_argument("--extra-hook", action="append", default=[])
    a = ap.parse_args(argv)
    try:
        with open(os.path.join(a.repo, "interpose", "vti_internal.h"), encoding="utf-8") as f:
            hooked = hooks(f.read()) + a.extra_hook
        with open(os.path.join(a.repo, "cupti", "vtcupti.c"), encoding="utf-8") as f:
            watched = cbids(f.read())
    except (OSError, ValueError) as e:
        print(f"check_cbids: {e}", file=sys.stderr)
        return 2
    missing = [h for h in hooked if h not in NOT_MEMORY and h not in watched]
    for h in missing:
        print(f"check_cbids: hook {h} has no watched CUPTI callback id (cupti/vtcupti.c)")
    if not missing:
        print(f"check_cbids: all {len(hooked) - len(NOT_MEMORY)} memory hooks are watched")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
