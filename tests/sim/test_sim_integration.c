/* Integration: an unmodified program linked with the real libcudart runs on
 * the simulated device through LD_LIBRARY_PATH, identically on every run; and
 * the environment variables, good and bad, each in a child process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *probe; /* path of sim_probe, argv[1] */

struct result {
    char out[8192], err[4096];
    int status;
};

static void slurp(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
}

/* Run probe [mode] with NAME=VALUE pairs added to the environment (NULL-ended). */
static void run(const char *mode, const char *const *env, struct result *res)
{
    int o[2], e[2];
    assert_int_equal(pipe(o), 0);
    assert_int_equal(pipe(e), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsetenv("VRAMTRACE_SIM_DEVICE");
        unsetenv("VRAMTRACE_SIM_MEMORY");
        unsetenv("VRAMTRACE_SIM_DEVICES");
        for (int i = 0; env && env[i]; i += 2)
            setenv(env[i], env[i + 1], 1);
        dup2(o[1], 1);
        dup2(e[1], 2);
        execl(probe, probe, mode, (char *)NULL);
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    slurp(o[0], res->out, sizeof res->out); /* outputs are small: no deadlock */
    slurp(e[0], res->err, sizeof res->err);
    close(o[0]);
    close(e[0]);
    waitpid(pid, &res->status, 0);
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void same_output_every_run(void **state)
{
    (void)state;
    static struct result a, b;
    run("report", NULL, &a);
    run("report", NULL, &b);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.out, b.out);
    assert_string_equal(a.err, "");
    assert_non_null(strstr(a.out, "runtime=13000 driver=13000"));
    assert_non_null(strstr(a.out, "huge rc=2 cudaErrorMemoryAllocation: out of memory"));
    assert_non_null(strstr(a.out, "last=cudaErrorMemoryAllocation then=cudaSuccess"));
    assert_non_null(strstr(a.out, "double free rc=1 invalid argument"));
    assert_non_null(strstr(a.out, "setdevice(7) rc=101 cudaErrorInvalidDevice"));
    assert_non_null(strstr(a.out, "realloc rc=0 offset=1536")); /* freed range reused */
    /* used at the end equals used at the start: the context reserve */
    assert_non_null(strstr(a.out, "start: meminfo rc=0 free=15787360256 total=16106127360"));
    assert_non_null(strstr(a.out, "end: meminfo rc=0 free=15787360256 total=16106127360"));
}

static void profiles_and_overrides(void **state)
{
    (void)state;
    static struct result r;
    const char *h100[] = {"VRAMTRACE_SIM_DEVICE", "h100-80gb", "VRAMTRACE_SIM_DEVICES", "3", NULL};
    run("env", h100, &r);
    assert_string_equal(r.err, "");
    assert_non_null(strstr(r.out, "devices=3 name=NVIDIA H100 80GB HBM3"));
    assert_non_null(strstr(r.out, "cc=9.0"));
    const char *mem[] = {"VRAMTRACE_SIM_DEVICE", "A100-40GB", "VRAMTRACE_SIM_MEMORY", "2GiB", NULL};
    run("env", mem, &r);
    assert_string_equal(r.err, "");
    assert_non_null(strstr(r.out, "total=2147483648"));
    assert_non_null(strstr(r.out, "sm=108 cc=8.0"));
    const char *mb[] = {"VRAMTRACE_SIM_MEMORY", "1500MB", NULL};
    run("env", mb, &r);
    assert_non_null(strstr(r.out, "total=1500000000"));
}

/* One clear stderr line naming the variable, then the default. */
static void bad_value(const char *var, const char *val, const char *expect_out)
{
    static struct result r;
    const char *env[] = {var, val, NULL};
    run("env", env, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(lines(r.err), 1);
    assert_non_null(strstr(r.err, "vramtrace-sim: "));
    assert_non_null(strstr(r.err, var));
    assert_non_null(strstr(r.err, val));
    assert_non_null(strstr(r.out, expect_out));
}

static void bad_environment_values(void **state)
{
    (void)state;
    const char *t4 = "devices=1 name=Tesla T4 total=16106127360 reserve=318767104";
    bad_value("VRAMTRACE_SIM_DEVICE", "gtx9000", t4);
    bad_value("VRAMTRACE_SIM_MEMORY", "lots", t4);
    bad_value("VRAMTRACE_SIM_MEMORY", "12 parsecs", t4);
    bad_value("VRAMTRACE_SIM_MEMORY", "1MiB", t4); /* below the context reserve */
    bad_value("VRAMTRACE_SIM_DEVICES", "0", t4);
    bad_value("VRAMTRACE_SIM_DEVICES", "two", t4);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-sim_probe\n", argv[0]);
        return 2;
    }
    probe = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_output_every_run),
        cmocka_unit_test(profiles_and_overrides),
        cmocka_unit_test(bad_environment_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
