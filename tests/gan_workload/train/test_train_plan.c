/* Unit tests of the DCGAN layer plan: the PyTorch dcgan example's parameter counts and the
 * shapes for 32, 128 and 256. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "train.h"

static void reference_64_counts(void **state)
{
    (void)state;
    tr_plan g, d;
    assert_int_equal(tr_plan_generator(&g, 64, 100, 64, 3), 0);
    assert_int_equal(tr_plan_discriminator(&d, 64, 3, 64), 0);
    assert_int_equal(g.n, 5);
    assert_int_equal(d.n, 5);
    assert_int_equal(tr_plan_param_count(&g), 3576704);
    assert_int_equal(tr_plan_param_count(&d), 2765568);
    assert_int_equal(g.l[0].c_out, 512);
    assert_int_equal(d.l[3].c_out, 512);
}

/* Each plan chains: channels and sizes of block i+1 follow block i; G ends at (nc, size),
 * D at (1, 1); block count log2(size) - 1. */
static void check_chain(const tr_plan *p, int first_c, int first_hw, int last_c, int last_hw)
{
    assert_int_equal(p->l[0].c_in, first_c);
    assert_int_equal(p->l[0].hw_in, first_hw);
    for (int i = 1; i < p->n; i++) {
        assert_int_equal(p->l[i].c_in, p->l[i - 1].c_out);
        assert_int_equal(p->l[i].hw_in, p->l[i - 1].hw_out);
    }
    assert_int_equal(p->l[p->n - 1].c_out, last_c);
    assert_int_equal(p->l[p->n - 1].hw_out, last_hw);
    assert_false(p->l[p->n - 1].bn);
}

static void other_sizes(void **state)
{
    (void)state;
    const int sizes[] = {32, 64, 128, 256};
    for (int i = 0; i < 4; i++) {
        tr_plan g, d;
        assert_int_equal(tr_plan_generator(&g, sizes[i], 100, 64, 3), 0);
        assert_int_equal(tr_plan_discriminator(&d, sizes[i], 3, 64), 0);
        assert_int_equal(g.n, 4 + i);
        assert_int_equal(d.n, 4 + i);
        check_chain(&g, 100, 1, 3, sizes[i]);
        check_chain(&d, 3, sizes[i], 1, 1);
        assert_int_equal(g.l[0].c_out, 64 << (g.n - 2));
        assert_int_equal(g.l[g.n - 1].act, TR_ACT_TANH);
        assert_int_equal(d.l[d.n - 1].act, TR_ACT_SIGMOID);
        assert_false(d.l[0].bn);
    }
}

static void counts_grow_with_size(void **state)
{
    (void)state;
    /* 32: G = 100*256*16 + 256*128*16 + 128*64*16 + 64*3*16 + BN 2*(256+128+64) */
    tr_plan g, d;
    assert_int_equal(tr_plan_generator(&g, 32, 100, 64, 3), 0);
    assert_int_equal(tr_plan_param_count(&g), 409600 + 524288 + 131072 + 3072 + 896);
    assert_int_equal(tr_plan_discriminator(&d, 32, 3, 64), 0);
    assert_int_equal(tr_plan_param_count(&d), 3072 + 131072 + 524288 + 4096 + 768);
    tr_plan g128;
    assert_int_equal(tr_plan_generator(&g128, 128, 100, 64, 3), 0);
    assert_true(tr_plan_param_count(&g128) > 3576704);
}

static void bad_sizes(void **state)
{
    (void)state;
    tr_plan p;
    assert_int_equal(tr_plan_generator(&p, 48, 100, 64, 3), -1);
    assert_int_equal(tr_plan_generator(&p, 16, 100, 64, 3), -1);
    assert_int_equal(tr_plan_generator(&p, 512, 100, 64, 3), -1);
    assert_int_equal(tr_plan_discriminator(&p, 0, 3, 64), -1);
    assert_int_equal(tr_plan_generator(&p, 64, 0, 64, 3), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference_64_counts),
        cmocka_unit_test(other_sizes),
        cmocka_unit_test(counts_grow_with_size),
        cmocka_unit_test(bad_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
