/* Host memory registration (cuMemHostRegister / cuMemHostUnregister) of the
 * simulated driver. Rules (CUDA Driver API, cuMemHostRegister): the range
 * [p, p+bytesize) is page-locked until cuMemHostUnregister(p) with the same
 * base address; registering memory that overlaps a registered range is
 * CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; unregistering a pointer that is
 * not the base of a registered range is CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
 * NULL, 0 bytes or an unknown flag is CUDA_ERROR_INVALID_VALUE. The end of
 * the device's contexts drops a registration (host_track.c). Host memory
 * stands in for device memory, so registration costs no device memory and
 * nothing is really locked. */
#include "driver_common.h"
#include "ledger.h"

#include <stdlib.h>

#define REGISTER_FLAGS                                                                             \
    (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |    \
     CU_MEMHOSTREGISTER_READ_ONLY)

static CUresult host_register(void *p, size_t bytesize, unsigned int Flags)
{
    CUresult err;
    uintptr_t a = (uintptr_t)p;
    struct sim_device *d = sim_need_device(&err);
    if (!d)
        return err;
    if (!p || bytesize == 0 || (Flags & ~(unsigned)REGISTER_FLAGS) || a + bytesize < a)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_host h = {a, bytesize, Flags, d->ordinal, true, NULL};
    return sim_host_add(&h);
}

/* cuMemHostRegister_v2 (CUDA 6.5) and the 4.0 cuMemHostRegister take the same
 * arguments; the _v2 accepts the flags added since. */
CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    SIM_LEDGER_SCOPE("cuMemHostRegister_v2");
    return (CUresult)vtsim_ledger_fail(SIM_LK_REGISTERED, -1, bytesize,
                                       host_register(p, bytesize, Flags));
}

CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    SIM_LEDGER_SCOPE("cuMemHostRegister");
    return (CUresult)vtsim_ledger_fail(SIM_LK_REGISTERED, -1, bytesize,
                                       host_register(p, bytesize, Flags));
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    CUresult err;
    struct sim_host gone;
    SIM_LEDGER_SCOPE("cuMemHostUnregister");
    if (!sim_need_device(&err))
        return (CUresult)sim_ledger_bad_free((uintptr_t)p, err);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_host_find((uintptr_t)p, true, SIM_HOST_REGISTERED, true, &gone)
               ? CUDA_SUCCESS
               : (CUresult)sim_ledger_bad_free((uintptr_t)p, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}
