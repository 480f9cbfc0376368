/* PyTorch's size pretty-printer and out-of-memory message. */
#include "alloc_internal.h"

#include <stdio.h>

/* c10/cuda/CUDACachingAllocator.cpp, format_size(): precision 2, fixed;
 * <= 1024 "bytes", <= 1 MiB "KiB", <= 1 GiB "MiB", else "GiB". */
const char *ga_format_size(uint64_t size, char *buf, size_t len)
{
    if (size <= 1024)
        snprintf(buf, len, "%llu bytes", (unsigned long long)size);
    else if (size <= 1048576)
        snprintf(buf, len, "%.2f KiB", (double)size / 1024.0);
    else if (size <= 1073741824ull)
        snprintf(buf, len, "%.2f MiB", (double)size / 1048576.0);
    else
        snprintf(buf, len, "%.2f GiB", (double)size / 1073741824.0);
    return buf;
}

/* c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator::malloc():
 * "CUDA out of memory. Tried to allocate <alloc_size>. GPU <d> has a total
 * capacity of <total> of which <free> is free. Of the allocated memory
 * <allocated> is allocated by PyTorch, and <reserved - allocated> is reserved
 * by PyTorch but unallocated." "Tried to allocate" is alloc_size, the segment
 * size get_allocation_size() asked cudaMalloc for. "PyTorch" reads "this
 * allocator" here; the process-memory, fraction, private-pool and
 * expandable_segments hints are left out (none of them exist here). */
void ga_format_oom(char *buf, size_t len, uint64_t alloc_size, int device, uint64_t device_total,
                   uint64_t device_free, uint64_t allocated, uint64_t reserved)
{
    char a[32], t[32], f[32], al[32], un[32];
    snprintf(buf, len,
             "CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of "
             "which %s is free. Of the allocated memory %s is allocated by this allocator, and "
             "%s is reserved by this allocator but unallocated.",
             ga_format_size(alloc_size, a, sizeof a), device,
             ga_format_size(device_total, t, sizeof t), ga_format_size(device_free, f, sizeof f),
             ga_format_size(allocated, al, sizeof al),
             ga_format_size(reserved - allocated, un, sizeof un));
}
