#!/usr/bin/env python3
"""Generate the simulated driver's full entry-point set from the toolkit's own
headers, so that libcuda.so.1 exports every function a real driver exports.

Input: cudaTypedefs.h, cudaProfilerTypedefs.h and the interop ones (NVIDIA's PFN_<name>_v<version>
typedefs: every driver entry point with the CUDA version that introduced it).
Outputs (argv: INCLUDE_DIR OUT_C OUT_INC OUT_LIST OUT_PROTO):
  OUT_C    weak definitions with the typedefs' prototypes: an entry point the
           sim implements (a strong definition in driver*.c) replaces its weak
           one at link time; the rest return CUDA_ERROR_NOT_SUPPORTED through
           sim_unsupported(). Per-thread-stream variants (_ptds/_ptsz) forward
           to the plain entry point, a NULL stream made CU_STREAM_PER_THREAD
           (without a stream argument, as cuMemcpy_ptds: with
           sim_per_thread_call set for the call); sim_per_thread[] pairs each plain entry point with that variant
           (cuGetProcAddress hands it out for CU_GET_PROC_ADDRESS_PER_THREAD_
           DEFAULT_STREAM).
  OUT_INC  the cuGetProcAddress table: P("base", version, symbol). Of the
           legacy forms cudaTypedefs.h declares only for the driver's own build,
           those before CUDA 3.2 (the 32-bit cuMemAlloc ...) are exported but
           not handed out.
  OUT_LIST every exported symbol, one per line (for the tests).
  OUT_PROTO V("base", version): the version of the variant cuda.h declares
           under the base name (its "#define base base_vN", else base
           itself), to ask cuGetProcAddress at when calling through cuda.h's
           prototype: at a newer version the driver may hand out a newer
           variant with other parameters (CUDA 13.0's "cuCtxGetDevice" is
           cuCtxGetDevice_v2(CUdevice *, CUcontext)).
Symbol rule (cuda.h's versioning macros): the variants of a base name, oldest
first, are exported as base, base_v2, base_v3, ...; a _ptds/_ptsz variant is
the newest plain variant at or before its version with that suffix.
"""
import os
import re
import sys

TYPEDEF = re.compile(r"typedef\s+CUresult\s*\(CUDAAPI\s*\*PFN_(\w+)\)\s*\((.*?)\)\s*;", re.S)
NAME = re.compile(r"^(\w+?)_v(\d+)(_ptds|_ptsz)?$")
HEADERS = ["cudaTypedefs.h", "cudaProfilerTypedefs.h"]
# Graphics interop (OpenGL, EGL, VDPAU): their headers need the GL/EGL/VDPAU
# headers, so these fallbacks are defined without parameters. That is ABI-safe
# on the System V x86-64 and AArch64 calling conventions (the caller owns its
# arguments) because they never read them; the sim has no graphics interop.
INTEROP = ["cudaGLTypedefs.h", "cudaEGLTypedefs.h", "cudaVDPAUTypedefs.h"]
# New CUDA 13 APIs that reuse an old name with a _v2 suffix and take an extra
# argument (cuda.h keeps the base names on the old functions). Binding layers
# that probe "<name>_v2" before "<name>" (numba <= 0.60's ctypes binding,
# HAMi-core) call them with the old arguments and pass garbage: numba-cuda
# issue #173, HAMi-core issue #233. The sim does not export them by these
# names; cuGetProcAddress hands them out (sim/driver_proc.c), as a real driver
# does.
HIDDEN = {"cuCtxGetDevice_v2", "cuCtxSynchronize_v2"}
# cuda.h's "#define cuName cuName_vN" maps a base name to its current variant.
MACRO = re.compile(r"^\s*#define\s+(cu\w+)\s+(?:__CUDA_API_PT[DS][SZ]\()?(cu\w+)\)?\s*$", re.M)


def read_macros(incdir):
    with open(os.path.join(incdir, "cuda.h"), encoding="utf-8") as f:
        return dict(MACRO.findall(f.read()))


LEGACY = re.compile(r"#if defined\(__CUDA_API_VERSION_INTERNAL\)(.*?)#endif", re.S)


def read_typedefs(incdir):
    """[(base, version, suffix, params, legacy)]; legacy: declared only for the
    driver's own build (the pre-3.2 32-bit forms and older revisions)."""
    out = []
    for h in HEADERS + INTEROP:
        with open(os.path.join(incdir, h), encoding="utf-8") as f:
            text = f.read()
            spans = [m.span() for m in LEGACY.finditer(text)]
            for m in TYPEDEF.finditer(text):
                legacy = any(a <= m.start() < b for a, b in spans)
                nm = NAME.match(m.group(1))
                if not nm:
                    sys.exit("gen_entry_points: unexpected typedef name PFN_%s" % m.group(1))
                params = " ".join(m.group(2).split()) if h in HEADERS else None
                out.append((nm.group(1), int(nm.group(2)), nm.group(3) or "", params, legacy))
    return out


def param_names(params):
    if params in ("", "void"):
        return []
    names = []
    for p in params.split(","):
        fp = re.search(r"\(\s*\w*\s*\*\s*(\w+)\s*\)", p)
        ident = fp.group(1) if fp else re.findall(r"\w+", p.split("[")[0])[-1]
        names.append(ident)
    return names


def forward_args(params, suffix):
    """The call's arguments: in a per-thread-stream variant (_ptsz) a NULL
    CUstream is the calling thread's default stream (cuda.h: "CU_STREAM_PER_THREAD
    ... the per-thread default stream"), which the plain entry point is given."""
    names = param_names(params)
    if suffix != "_ptsz":
        return ", ".join(names)
    types = [p.strip() for p in params.split(",")] if names else []
    return ", ".join("%s ? %s : CU_STREAM_PER_THREAD" % (n, n) if re.match(r"CUstream\s+\w+$", t)
                     else n for n, t in zip(names, types))


def assign_symbols(entries):
    """[(symbol, base, version, suffix, params)], in header order."""
    plain = {}
    for base, ver, suf, _, _ in entries:
        if not suf:
            plain.setdefault(base, set()).add(ver)
    sym_of = {}
    for base, vers in plain.items():
        for i, v in enumerate(sorted(vers)):
            sym_of[(base, v)] = base if i == 0 else "%s_v%d" % (base, i + 1)
    out = []
    for base, ver, suf, params, legacy in entries:
        if suf:
            older = [v for v in plain.get(base, ()) if v <= ver]
            target = sym_of[(base, max(older))] if older else base
            out.append((target + suf, base, ver, params, target, legacy))
        else:
            out.append((sym_of[(base, ver)], base, ver, params, None, legacy))
    return out


def proto_versions(variants, macros):
    """{base: version of the variant cuda.h declares as `base`}."""
    out = {}
    for base, vs in variants.items():
        target = macros.get(base, base)
        if target in vs:
            out[base] = vs[target]
    return out


def main():
    incdir, out_c, out_inc, out_list, out_proto = sys.argv[1:6]
    syms = [x for x in assign_symbols(read_typedefs(incdir)) if x[0] not in HIDDEN]
    macros = read_macros(incdir)
    variants = {}
    for sym, base, ver, _, target, _ in syms:
        if not target:
            variants.setdefault(base, {})[sym] = ver
    per_thread = {sym: target for sym, _, _, _, target, _ in syms if target}
    seen = set()
    c = ["/* Generated by sim/tools/gen_entry_points.py from the toolkit's cudaTypedefs.h;",
         " * do not edit. Weak: the sim's own definitions replace these. */",
         "#define __CUDA_API_VERSION_INTERNAL 1",
         "#include <cuda.h>",
         "#include <cudaProfiler.h>",
         "",
         "#include \"driver_extra.h\"",
         "",
         "#pragma GCC diagnostic ignored \"-Wunused-parameter\"",
         ""]
    inc, names = [], []
    for sym, base, ver, params, target, legacy in syms:
        if sym in seen:
            continue
        seen.add(sym)
        names.append(sym)
        if params is None:
            params, body = "void", "return sim_unsupported(\"%s\");" % sym
        elif target and "CUstream" in params:
            body = "return %s(%s);" % (target, forward_args(params, sym[len(target):]))
        elif target:  # no stream argument: the call is on the thread's own stream
            body = ("int was = sim_per_thread_call;\n    sim_per_thread_call = 1;\n"
                    "    CUresult r = %s(%s);\n    sim_per_thread_call = was;\n    return r;"
                    % (target, forward_args(params, sym[len(target):])))
        else:
            body = "return sim_unsupported(\"%s\");" % sym
            if not legacy or ver >= 3020:
                inc.append("P(\"%s\", %d, %s)," % (base, ver, sym))
        c.append("__attribute__((weak)) CUresult CUDAAPI %s(%s)\n{\n    %s\n}\n" % (sym, params, body))
    pairs = ["    {(void *)%s, (void *)%s}," % (t, p) for p, t in per_thread.items() if p in seen]
    c.append("const struct sim_per_thread_entry sim_per_thread[] = {\n%s\n};" % "\n".join(pairs))
    c.append("const size_t sim_per_thread_count = %d;\n" % len(pairs))
    with open(out_c, "w", encoding="utf-8") as f:
        f.write("\n".join(c))
    with open(out_inc, "w", encoding="utf-8") as f:
        f.write("/* Generated by sim/tools/gen_entry_points.py; do not edit. */\n")
        f.write("\n".join(inc) + "\n")
    with open(out_list, "w", encoding="utf-8") as f:
        f.write("\n".join(names) + "\n")
    with open(out_proto, "w", encoding="utf-8") as f:
        f.write("/* Generated by sim/tools/gen_entry_points.py; do not edit. */\n")
        f.write("".join("V(\"%s\", %d)\n" % kv for kv in sorted(proto_versions(variants, macros).items())))


if __name__ == "__main__":
    main()
