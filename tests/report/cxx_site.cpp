// cxx_site.cpp: C++ functions whose mangled names the report must demangle:
// one of the test's own, and stand-ins with the names of PyTorch's segment
// allocation (c10/cuda/CUDACachingAllocator.cpp) and pinned host block
// allocation (aten/src/ATen/cuda/CachingHostAllocator.cpp), which the report
// must know.
#include <cstdint>

namespace vtt
{
__attribute__((noinline)) int cxx_site(int x)
{
    volatile int y = x * 3;
    return y + 1;
}
} // namespace vtt

extern "C" uintptr_t vtt_cxx_site_address(void)
{
    return reinterpret_cast<uintptr_t>(&vtt::cxx_site);
}

namespace c10::cuda::CUDACachingAllocator::Native
{
struct DeviceCachingAllocator {
    __attribute__((noinline)) static int alloc_block(int x)
    {
        volatile int y = x * 5;
        return y + 2;
    }
};
} // namespace c10::cuda::CUDACachingAllocator::Native

extern "C" uintptr_t vtt_torch_alloc_block_address(void)
{
    return reinterpret_cast<uintptr_t>(
        &c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block);
}

namespace at::cuda
{
namespace
{
struct CUDACachingHostAllocatorImpl {
    __attribute__((noinline)) static int allocate_host_memory_slowpath(int x)
    {
        volatile int y = x * 7;
        return y + 3;
    }
};
} // namespace
} // namespace at::cuda

extern "C" uintptr_t vtt_torch_host_alloc_address(void)
{
    return reinterpret_cast<uintptr_t>(
        &at::cuda::CUDACachingHostAllocatorImpl::allocate_host_memory_slowpath);
}
