/* Host memory registration (cuMemHostRegister / cuMemHostUnregister) of the
 * simulated driver. Rules (CUDA Driver API, cuMemHostRegister): the range
 * [p, p+bytesize) is page-locked until cuMemHostUnregister(p) with the same
 * base address; registering memory that overlaps a registered range is
 * CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; unregistering a pointer that is
 * not the base of a registered range is CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
 * NULL, 0 bytes or an unknown flag is CUDA_ERROR_INVALID_VALUE. Host memory
 * stands in for device memory, so registration costs no device memory and
 * nothing is really locked. */
#include "driver_common.h"
#include "ledger.h"

#include <stdlib.h>

#define REGISTER_FLAGS                                                                             \
    (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_IOMEMORY |    \
     CU_MEMHOSTREGISTER_READ_ONLY)

struct host_reg {
    uintptr_t base;
    size_t size;
    struct host_reg *next;
};
static struct host_reg *regs;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

/* A registered range overlapping [p, p+size); locked. */
static int reg_overlaps(uintptr_t p, size_t size)
{
    for (struct host_reg *r = regs; r; r = r->next)
        if (p < r->base + r->size && r->base < p + size)
            return 1;
    return 0;
}

static CUresult host_register(void *p, size_t bytesize, unsigned int Flags)
{
    CUresult err;
    uintptr_t a = (uintptr_t)p;
    struct host_reg *r;
    if (!sim_need_device(&err))
        return err;
    if (!p || bytesize == 0 || (Flags & ~(unsigned)REGISTER_FLAGS) || a + bytesize < a)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(r = malloc(sizeof *r)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&reg_lock);
    err = reg_overlaps(a, bytesize) ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED : CUDA_SUCCESS;
    if (!err) {
        *r = (struct host_reg){a, bytesize, regs};
        regs = r;
        sim_ledger_alloc(SIM_LK_REGISTERED, -1, a, bytesize);
    }
    pthread_mutex_unlock(&reg_lock);
    if (err)
        free(r);
    return err;
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
    struct host_reg *gone = NULL;
    SIM_LEDGER_SCOPE("cuMemHostUnregister");
    if (!sim_need_device(&err))
        return err;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&reg_lock);
    for (struct host_reg **pp = &regs; *pp; pp = &(*pp)->next)
        if ((*pp)->base == (uintptr_t)p) {
            gone = *pp;
            *pp = gone->next;
            sim_ledger_free(SIM_LK_REGISTERED, -1, gone->base, gone->size);
            break;
        }
    pthread_mutex_unlock(&reg_lock);
    free(gone);
    return gone
               ? CUDA_SUCCESS
               : (CUresult)sim_ledger_bad_free((uintptr_t)p, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}
