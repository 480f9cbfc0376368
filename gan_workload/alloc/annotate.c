/* NVTX Mem annotations: each segment is a sub-allocator heap, each handed-out
 * block a region in it, so a tool (vramtrace) sees tensors inside segments.
 * API: /usr/local/cuda/include/nvtx3/nvToolsExtMem.h (NVTX 3, header-only:
 * the first call looks for an injection library; without one every entry
 * point becomes a no-op). */
#include "alloc_internal.h"

#include <nvtx3/nvToolsExtMem.h>

#include <string.h>

#define GA_NVTX_DOMAIN "vramtrace.gan"

void ga_annot_init(ga_annot *an)
{
    an->domain = nvtxDomainCreateA(GA_NVTX_DOMAIN);
}

void ga_annot_fini(ga_annot *an)
{
    nvtxDomainDestroy((nvtxDomainHandle_t)an->domain);
    an->domain = NULL;
}

void *ga_annot_heap_register(ga_annot *an, uintptr_t ptr, size_t size)
{
    nvtxMemVirtualRangeDesc_t range = {.size = size, .ptr = (const void *)ptr};
    nvtxMemHeapDesc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.extCompatID = NVTX_EXT_COMPATID_MEM;
    desc.structSize = sizeof desc;
    desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    desc.typeSpecificDescSize = sizeof range;
    desc.typeSpecificDesc = &range;
    desc.messageType = NVTX_MESSAGE_UNKNOWN;
    return nvtxMemHeapRegister((nvtxDomainHandle_t)an->domain, &desc);
}

void ga_annot_heap_unregister(ga_annot *an, void *heap)
{
    nvtxMemHeapUnregister((nvtxDomainHandle_t)an->domain, (nvtxMemHeapHandle_t)heap);
}

void ga_annot_region_register(ga_annot *an, void *heap, uintptr_t ptr, size_t size)
{
    nvtxMemVirtualRangeDesc_t range = {.size = size, .ptr = (const void *)ptr};
    nvtxMemRegionsRegisterBatch_t batch;
    memset(&batch, 0, sizeof batch);
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof batch;
    batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    batch.heap = (nvtxMemHeapHandle_t)heap;
    batch.regionCount = 1;
    batch.regionDescElementSize = sizeof range;
    batch.regionDescElements = &range;
    batch.regionHandleElementsOut = NULL; /* regions are referred to by pointer */
    nvtxMemRegionsRegister((nvtxDomainHandle_t)an->domain, &batch);
}

void ga_annot_region_unregister(ga_annot *an, uintptr_t ptr)
{
    nvtxMemRegionRef_t ref = {.pointer = (const void *)ptr};
    nvtxMemRegionsUnregisterBatch_t batch;
    memset(&batch, 0, sizeof batch);
    batch.extCompatID = NVTX_EXT_COMPATID_MEM;
    batch.structSize = sizeof batch;
    batch.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    batch.refCount = 1;
    batch.refElementSize = sizeof ref;
    batch.refElements = &ref;
    nvtxMemRegionsUnregister((nvtxDomainHandle_t)an->domain, &batch);
}
