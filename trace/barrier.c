/* barrier.c: the asymmetric barrier (vtrace.h, "Asymmetric barrier"):
 * Linux membarrier(2), private expedited. Shared by the trace writer's
 * lock-free per-thread buffers (writer.c) and the recorder's order lock
 * (interpose/orderlock.c). */
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vtrace.h"

bool vt_barrier_register(void)
{
    int saved = errno;
    bool ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    errno = saved;
    return ok;
}

bool vt_barrier_all(void)
{
    int saved = errno;
    bool ok = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
    errno = saved;
    return ok;
}
