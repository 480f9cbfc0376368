// t_unwind_cxx.cpp: C++ exceptions thrown through frames between captures
// of the fast stack walk (t_unwind.c).
#include <stdexcept>

#include "t_unwind.h"

static volatile int sink;

__attribute__((noinline)) static int thrower(int depth)
{
    if (depth > 1) {
        int r = thrower(depth - 1);
        sink = sink + r;
        return r;
    }
    tu_compare("before throw");
    throw std::runtime_error("through the frames");
}

struct Guard {
    ~Guard()
    {
        tu_compare("destructor during unwinding");
    }
};

__attribute__((noinline)) static int with_guard(int depth)
{
    Guard g;
    return thrower(depth);
}

extern "C" void tu_cxx_exceptions(void)
{
    for (int i = 0; i < 4; i++) {
        try {
            with_guard(5 + 9 * i);
        } catch (const std::exception &) {
            tu_compare("in catch");
        }
        tu_compare("after catch");
    }
}
