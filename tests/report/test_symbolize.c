/* test_symbolize.c: symbolization (symbolize.c) on this very executable: a C function with
 * its file and line, a demangled C++ one, a CUDA library frame folded. */
#include "report_test.h"

#include <link.h>

__attribute__((noinline)) int vtt_user_site(int x);
__attribute__((noinline)) int vtt_user_site(int x)
{
    volatile int y = x + 1;
    return y * 2;
}

uintptr_t vtt_cxx_site_address(void);

typedef struct self_mod {
    uintptr_t addr;
    uint64_t bias, start, end;
    char path[512];
} self_mod;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    self_mod *m = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && m->addr >= lo && m->addr < hi) {
            m->bias = info->dlpi_addr;
            m->start = lo;
            m->end = hi;
            if (info->dlpi_name && info->dlpi_name[0])
                snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
            else if (!realpath("/proc/self/exe", m->path))
                m->path[0] = 0;
            return 1;
        }
    }
    return 0;
}

static void test_symbolize(void **state)
{
    (void)state;
    self_mod m = {.addr = (uintptr_t)&vtt_user_site};
    assert_int_equal(dl_iterate_phdr(find_self, &m), 1);
    const char *path = tmp_path("symbols");
    const char *argv[] = {"symbols"};
    vtg g;
    assert_int_equal(vtg_open(&g, path, 1, argv), 0);
    vtg_module(&g, 1, m.path, m.bias, m.start, m.end);
    vtg_module(&g, 2, "/opt/fake/libcudart.so.13", 0, 0x1000, 0x2000);
    vtg_stack(&g, 1, 0, (uint64_t)vtt_cxx_site_address() + 4);
    vtg_stack(&g, 2, 1, (uint64_t)(uintptr_t)&vtt_user_site + 4);
    vtg_stack(&g, 3, 2, 0x1100); /* inside "libcudart": folded */
    vtg_device(&g, 0, "SimGPU", GiB);
    vtg_alloc(&g, 100, 0x1000000, MiB, 3);
    vtg_end(&g, 200, 0);
    assert_int_equal(vtg_close(&g), 0);
    char err[256];
    vr_report *r = vr_analyze(path, NULL, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(r->nleaks, 1);
    const vr_stack *st = &r->leaks[0].stack;
    assert_true(st->n >= 2);
    assert_string_equal(st->frames[0].function, "vtt_user_site");
    assert_non_null(strstr(st->frames[0].file, "test_symbolize.c"));
    assert_true(st->frames[0].line > 0);
    assert_non_null(strstr(st->frames[st->n - 1].function, "vtt::cxx_site(int)"));
    vr_report_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbolize),
    };
    return cmocka_run_group_tests(tests, vrt_setup, vrt_teardown);
}
