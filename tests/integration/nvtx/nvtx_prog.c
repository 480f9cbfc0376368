/* nvtx_prog.c: an NVTX-annotated program for the preload test (run by
 * run_nvtx_preload.sh, checked by nvtx_check.c, which hard-codes what is
 * done here: keep the two in step).
 *
 * Ranges: nested push/pop in the default domain and in domain "vtdom", a wide
 * name, marks, a start/end range, a registered string, and a second thread.
 * Memory: a 1 MiB cudaMalloc segment used by a tiny sub-allocator annotated
 * with the NVTX Mem API (heap register, regions register/resize/name/
 * unregister, heap reset, heap unregister).
 *
 * Exit status: 0 ok, 2 a CUDA call failed, 3 NVTX_INJECTION64_PATH does not
 * name the already loaded (preloaded) vramtrace library. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include "nvtx_test_helpers.h"

#define SEGMENT_BYTES (1u << 20)

/* The injection NVTX will dlopen() must be the object already in the process:
 * same handle, same entry point, so no second session can start. */
static int check_same_object(void)
{
    const char *path = getenv("NVTX_INJECTION64_PATH");
    if (!path || !*path) { /* "" would dlopen the main program: right only by accident */
        fprintf(stderr, "nvtx_prog: NVTX_INJECTION64_PATH not set by the preload\n");
        return 3;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    void *mine = h ? dlsym(h, "InitializeInjectionNvtx2") : NULL;
    void *global = dlsym(RTLD_DEFAULT, "InitializeInjectionNvtx2");
    if (!h || !mine || mine != global) {
        fprintf(stderr, "nvtx_prog: %s is not the preloaded object\n", path);
        return 3;
    }
    return 0;
}

static void *worker(void *arg)
{
    (void)arg;
    nvtxRangePushA("worker");
    nvtxRangePop();
    return NULL;
}

static void ranges(nvtxDomainHandle_t d)
{
    nvtxRangePushA("train");
    nvtxEventAttributes_t fwd = attr_ascii("G.forward");
    nvtxDomainRangePushEx(d, &fwd);
    nvtxRangePushW(L"wide-\u00fc\u540d");
    nvtxMarkA("mark1");
    nvtxRangePop();
    nvtxDomainRangePop(d);
    nvtxRangeId_t id = nvtxRangeStartA("epoch");
    nvtxEventAttributes_t reg = attr_ascii(NULL);
    reg.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    reg.message.registered = nvtxDomainRegisterStringA(d, "reg");
    nvtxDomainMarkEx(d, &reg);
    nvtxRangeEnd(id);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) == 0)
        pthread_join(t, NULL);
    nvtxRangePop();
}

static nvtxMemHeapHandle_t heap_register(nvtxDomainHandle_t d, char *seg)
{
    nvtxMemVirtualRangeDesc_t va = {SEGMENT_BYTES, seg};
    nvtxMemHeapDesc_t hd = {0};
    hd.extCompatID = NVTX_EXT_COMPATID_MEM;
    hd.structSize = sizeof hd;
    hd.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    hd.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    hd.typeSpecificDescSize = sizeof va;
    hd.typeSpecificDesc = &va;
    return nvtxMemHeapRegister(d, &hd);
}

static void resize(nvtxDomainHandle_t d, void *p, size_t size)
{
    nvtxMemVirtualRangeDesc_t r = {size, p};
    nvtxMemRegionsResizeBatch_t b = {
        NVTX_EXT_COMPATID_MEM, sizeof b, NVTX_MEM_TYPE_VIRTUAL_ADDRESS, 1, sizeof r, &r};
    nvtxMemRegionsResize(d, &b);
}

static void name(nvtxDomainHandle_t d, nvtxMemRegionHandle_t h, const char *text)
{
    nvtxMemRegionNameDesc_t n = {0};
    n.regionRefType = NVTX_MEM_REGION_REF_TYPE_HANDLE;
    n.nameType = NVTX_MESSAGE_TYPE_ASCII;
    n.region.handle = h;
    n.name.ascii = text;
    nvtxMemRegionsNameBatch_t b = {NVTX_EXT_COMPATID_MEM, sizeof b, 0, 1, sizeof n, &n, 0};
    nvtxMemRegionsName(d, &b);
}

static void sub_allocator(nvtxDomainHandle_t d, char *seg)
{
    nvtxMemHeapHandle_t h = heap_register(d, seg);
    nvtxMemVirtualRangeDesc_t r[3] = {{4096, seg}, {8192, seg + 4096}, {65536, seg + 16384}};
    nvtxMemRegionHandle_t out[3] = {0};
    regions_register(d, h, r, 3, out);
    resize(d, seg + 16384, 32768);
    name(d, out[1], "activations");
    unregister_one(d, NVTX_MEM_REGION_REF_TYPE_POINTER, (nvtxMemRegionRef_t){.pointer = seg});
    unregister_one(d, NVTX_MEM_REGION_REF_TYPE_HANDLE, (nvtxMemRegionRef_t){.handle = out[1]});
    nvtxMemHeapReset(d, h);
    nvtxMemVirtualRangeDesc_t again = {512, seg};
    regions_register(d, h, &again, 1, NULL);
    unregister_one(d, NVTX_MEM_REGION_REF_TYPE_POINTER, (nvtxMemRegionRef_t){.pointer = seg});
    nvtxMemHeapUnregister(d, h);
}

int main(void)
{
    int rc = check_same_object();
    if (rc)
        return rc;
    nvtxDomainHandle_t d = nvtxDomainCreateA("vtdom");
    ranges(d);
    void *seg = NULL;
    if (cudaMalloc(&seg, SEGMENT_BYTES) != cudaSuccess) {
        fprintf(stderr, "nvtx_prog: cudaMalloc failed\n");
        return 2;
    }
    sub_allocator(d, seg);
    if (cudaFree(seg) != cudaSuccess)
        return 2;
    nvtxDomainDestroy(d);
    return 0;
}
