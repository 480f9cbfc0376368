/* nvtx_test_helpers.h: NVTX call builders shared by the NVTX tests (the
 * injection unit test and the program run under the preload). */
#ifndef VRAMTRACE_NVTX_TEST_HELPERS_H
#define VRAMTRACE_NVTX_TEST_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

/* Event attributes carrying an ASCII message. */
static inline nvtxEventAttributes_t attr_ascii(const char *m)
{
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = m;
    return a;
}

/* Register n virtual-address regions r in heap h; handles go to out (may be NULL). */
static inline void regions_register(nvtxDomainHandle_t d, nvtxMemHeapHandle_t h,
                                    const nvtxMemVirtualRangeDesc_t *r, size_t n,
                                    nvtxMemRegionHandle_t *out)
{
    nvtxMemRegionsRegisterBatch_t b = {
        NVTX_EXT_COMPATID_MEM, sizeof b, NVTX_MEM_TYPE_VIRTUAL_ADDRESS, h, n, sizeof r[0], r, out};
    nvtxMemRegionsRegister(d, &b);
}

/* Unregister one region, named by pointer or by handle (ref_type). */
static inline void unregister_one(nvtxDomainHandle_t d, uint32_t ref_type, nvtxMemRegionRef_t ref)
{
    nvtxMemRegionsUnregisterBatch_t b = {
        NVTX_EXT_COMPATID_MEM, sizeof b, ref_type, 1, sizeof ref, &ref};
    nvtxMemRegionsUnregister(d, &b);
}

#endif
