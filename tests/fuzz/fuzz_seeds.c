/* fuzz_seeds.c: writes a seed corpus into a directory.
 *   vt_fuzz_seeds DIR           fuzz_reader's: a few valid traces made by the
 *                               writer (every record type, several frames,
 *                               several threads)
 *   vt_fuzz_seeds --report DIR  fuzz_report's: tests/report's scenarios
 *                               (gen.h), whose events mean something to the
 *                               report (peaks, leaks, heaps, OOMs, ranges)
 * and beside each trace its decompressed batches (for the fuzzers' "batch"
 * mode, fuzz_image.h). Exit status 0 or 1. */
#include "gen.h"
#include "records.h"
#include "vtrace.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

/* One event of each record type, fields varied by k. */
static vt_event sample(enum vt_rec t, uint64_t k)
{
    vt_event e = {.type = t, .ts_ns = vt_rec_is_definition(t) ? 0 : 1000 + k * 10};
    static const char *const strs[] = {"", "libcudart.so.13", "G.forward"};
    e.u.alloc.addr = 0x7f0000000000ull + k * 4096;
    e.u.alloc.size = 512 * (k + 1);
    e.u.alloc.stack = (uint32_t)k;
    e.u.alloc.device = (int32_t)(k % 3) - 1;
    e.u.alloc.api = (enum vt_api)(k % VT_API_MAX_);
    e.u.alloc.stream = k;
    vt_rec_set_string(&e, strs[k % 3]);
    if (t == VT_REC_MODULE)
        e.u.module.build_id = k % 2 ? "3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f" : "";
    if (t == VT_REC_STACK_NODE)
        e.u.stack_node = (__typeof__(e.u.stack_node)){(uint32_t)k + 1, (uint32_t)k, 0x401000 + k};
    return e;
}

static int write_seed(const char *path, int nthreads, int frames)
{
    char err[256];
    const char *argv[] = {"./train", "--scenario", "leak"};
    vt_header h = {.pid = 1234,
                   .host = "seed",
                   .program = "/bin/train",
                   .argc = 3,
                   .argv = argv,
                   .vramtrace_version = "0.1.0",
                   .stack_depth = 64};
    vt_writer_opts o = {.no_thread = true};
    unlink(path);
    vt_writer *w = vt_writer_open(path, &h, &o, err, sizeof err);
    if (!w) {
        fprintf(stderr, "vt_fuzz_seeds: %s\n", err);
        return -1;
    }
    uint64_t k = 0;
    int bad = 0;
    for (int f = 0; f < frames; f++) {
        for (int t = 0; t < nthreads; t++) {
            vt_tbuf *tb = vt_writer_attach(w, (uint32_t)(100 + t));
            for (int r = 1; r < VT_REC_MAX_; r++) {
                vt_event e = sample((enum vt_rec)r, k++);
                bad |= vt_write(tb, &e) != 0;
            }
            vt_writer_detach(w, tb);
        }
        bad |= vt_writer_flush(w) != 0;
    }
    if (vt_writer_close(w) != 0 || bad) {
        fprintf(stderr, "vt_fuzz_seeds: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

/* Write the decompressed frames of the trace at path, one after the other
 * (one batch of all their chunks), to out. */
static int write_batch_seed(const char *path, const char *out)
{
    FILE *f = fopen(path, "rb");
    static uint8_t buf[1 << 20], batch[4 << 20];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    uint32_t version, hlen;
    char err[256];
    if (n == sizeof buf || n < VT_FILE_PREFIX_LEN ||
        vt_prefix_decode(buf, &version, &hlen, err, sizeof err) < 0)
        return -1;
    size_t bn = 0;
    for (size_t off = VT_FILE_PREFIX_LEN + hlen; off < n;) {
        size_t fsz = ZSTD_findFrameCompressedSize(buf + off, n - off);
        size_t k = ZSTD_isError(fsz)
                       ? fsz
                       : ZSTD_decompress(batch + bn, sizeof batch - bn, buf + off, fsz);
        if (ZSTD_isError(k))
            return -1;
        bn += k;
        off += fsz;
    }
    FILE *o = fopen(out, "wb");
    int rc = o && fwrite(batch, 1, bn, o) == bn ? 0 : -1;
    if (o)
        fclose(o);
    return rc;
}

int main(int argc, char **argv);

/* A trace whose one module is this program's file with its build-id, at
 * its load address, and stacks at return addresses inside its functions:
 * what the symbolizer names (DWARF functions, inline chains, lines) when
 * fuzz_report turns symbols on. */
static int write_symbols_seed(const char *path)
{
    Dl_info dl;
    char self[4096], id[VT_MAX_ID_LEN + 1];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0 || !dladdr((void *)write_seed, &dl))
        return -1;
    self[sl] = '\0';
    vtg_file_build_id(self, id);
    uint64_t base = (uintptr_t)dl.dli_fbase;
    const uint64_t ips[] = {(uintptr_t)write_seed, (uintptr_t)sample, (uintptr_t)write_batch_seed,
                            (uintptr_t)main};
    vtg g;
    const char *argv[] = {"symbols"};
    unlink(path);
    if (vtg_open(&g, path, 1, argv) < 0)
        return -1;
    vtg_module_id(&g, 1, self, base, base, base + 4 * MiB, id);
    vtg_device(&g, 0, "SimGPU", GiB);
    for (uint32_t k = 1; k <= 16; k++) {
        vtg_stack(&g, k, k / 2, ips[k % 4] + 4 * k);
        vtg_alloc(&g, 1000 * k, 0x10000000 + k * MiB, MiB, k);
    }
    vtg_free(&g, 20000, 0x10000000 + MiB);
    vtg_end(&g, 30000, 0);
    return vtg_close(&g);
}

/* fuzz_report's seeds: every scenario of gen.h, and write_symbols_seed's
 * trace, each as a trace and a batch. */
static int report_seeds(const char *dir)
{
    char path[4096], out[4096];
    snprintf(path, sizeof path, "%s/symbols.vtrace", dir);
    snprintf(out, sizeof out, "%s/symbols.batch", dir);
    if (write_symbols_seed(path) < 0 || write_batch_seed(path, out) < 0) {
        fprintf(stderr, "vt_fuzz_seeds: the symbols seed failed\n");
        return 1;
    }
    const char *name;
    for (size_t i = 0; (name = vtg_scenario_name(i)); i++) {
        snprintf(path, sizeof path, "%s/%s.vtrace", dir, name);
        snprintf(out, sizeof out, "%s/%s.batch", dir, name);
        unlink(path);
        if (vtg_scenario(name, path) < 0 || write_batch_seed(path, out) < 0) {
            fprintf(stderr, "vt_fuzz_seeds: scenario %s failed\n", name);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    bool report = argc == 3 && !strcmp(argv[1], "--report");
    if (argc != 2 && !report) {
        fprintf(stderr, "usage: vt_fuzz_seeds [--report] DIR\n");
        return 1;
    }
    const char *dir = argv[argc - 1];
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        perror(dir);
        return 1;
    }
    if (report)
        return report_seeds(dir);
    static const int shapes[][2] = {{1, 1}, {2, 3}, {4, 2}};
    for (int i = 0; i < 3; i++) {
        char path[4096], out[4096];
        snprintf(path, sizeof path, "%s/seed%d.vtrace", dir, i);
        snprintf(out, sizeof out, "%s/seed%d.batch", dir, i);
        if (write_seed(path, shapes[i][0], shapes[i][1]) < 0 || write_batch_seed(path, out) < 0)
            return 1;
    }
    return 0;
}
