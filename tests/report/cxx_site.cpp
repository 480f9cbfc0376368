// cxx_site.cpp: a C++ function whose mangled name the report must demangle.
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
