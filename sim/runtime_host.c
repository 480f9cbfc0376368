/* cudaHostRegister / cudaHostUnregister of the simulated runtime: the
 * driver's cuMemHostRegister / cuMemHostUnregister (driver_host.c), whose
 * results share their numbers with the runtime's
 * (cudaErrorHostMemoryAlreadyRegistered = 712, cudaErrorHostMemoryNotRegistered
 * = 713, as CUDA_ERROR_HOST_MEMORY_*). */
#include "runtime_internal.h"

cudaError_t CUDARTAPI cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    RT_LEDGER_SCOPE("cudaHostRegister", "host_registered", size);
    cudaError_t e = rt_ready();
    return rt_ret(e ? e : rt_err(rt_drv.cuMemHostRegister(ptr, size, flags)));
}

cudaError_t CUDARTAPI cudaHostUnregister(void *ptr)
{
    RT_LEDGER_SCOPE("cudaHostUnregister", NULL, 0);
    cudaError_t e = rt_ready();
    return rt_ret(e ? e : rt_err(rt_drv.cuMemHostUnregister(ptr)));
}
