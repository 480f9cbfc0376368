/* export_table.c: notice a CUDA runtime that cannot reach the device.
 * NVIDIA's runtime (statically linked into a program, nvcc's default, or its
 * libcudart.so) asks the driver for cuGetExportTable through
 * cuGetProcAddress; a driver without it (the simulated device) fails that
 * call, the runtime then fails every call, and no allocation is ever
 * attempted. The cuGetProcAddress hooks hand out a forwarder; its first
 * failure puts one note in the trace, which the report prints. The result is
 * returned untouched. Calls from vramtrace's own CUPTI (libcupti, another
 * NVIDIA library) are left alone: their failure is noted by cupti_loader.c. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "vti_internal.h"

typedef CUresult(CUDAAPI *export_fn)(const void **, const CUuuid *);
static _Atomic(export_fn) real_export;
static atomic_int noted;

static CUresult CUDAAPI export_table_hook(const void **ppExportTable, const CUuuid *pExportTableId)
{
    export_fn real = atomic_load(&real_export);
    CUresult rc = real ? real(ppExportTable, pExportTableId) : CUDA_ERROR_NOT_FOUND;
    if (rc != CUDA_SUCCESS && !atomic_exchange(&noted, 1) && vti_recording()) {
        char text[400];
        snprintf(text, sizeof text,
                 "the program's CUDA runtime could not reach the device: cuGetExportTable "
                 "failed (CUDA error %d), so it made no allocation; on the simulated device "
                 "rebuild the program with nvcc -cudart shared",
                 (int)rc);
        vt_event ev = {.type = VT_REC_NOTE};
        ev.u.note.text = text;
        vti_emit(&ev);
    }
    return rc;
}

/* true when the code at ret belongs to an NVIDIA library other than libcudart. */
static bool nvidia_library(const void *ret)
{
    Dl_info info;
    if (!dladdr(ret, &info) || !info.dli_fname)
        return false;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    return strncmp(base, "libcudart", 9) != 0 &&
           (strncmp(base, "libcu", 5) == 0 || strncmp(base, "libnv", 5) == 0);
}

void vti_watch_export_table(const char *symbol, void **pfn, const void *caller)
{
    if (!symbol || !pfn || !*pfn || strcmp(symbol, "cuGetExportTable") != 0 ||
        nvidia_library(caller))
        return;
    atomic_store(&real_export, (export_fn)*pfn);
    *pfn = (void *)export_table_hook;
}
