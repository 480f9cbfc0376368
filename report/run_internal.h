/* run_internal.h: report/ internals for runs of several processes (a
 * launcher and its children, ranks): `vramtrace run`'s list of traces and
 * the multi-process section of `vramtrace report`. Private to report/. */
#ifndef VRAMTRACE_REPORT_RUN_INTERNAL_H
#define VRAMTRACE_REPORT_RUN_INTERNAL_H

#include "report.h"
#include "vtrace.h"

/* `vramtrace run`'s run: its id and the list file the preload appends each
 * trace's path to (trace/vtrace.h, "Run naming"). */
typedef struct vr_run_list {
    char id[VT_RUN_ID_LEN + 1];
    char list[4096];
    /* set by the caller after vr_run_begin: no --sim and no CUDA driver
     * (vr_cuda_driver_present) */
    bool no_driver;
} vr_run_list;
/* Whether libcuda.so.1 (the CUDA driver) can be loaded with this process's
 * library path, as the program will search it: asked in a child that
 * leaves with _exit (no driver state in vramtrace). */
bool vr_cuda_driver_present(void);
/* Draw the run id, create the list file (mode 0600, in $TMPDIR or /tmp) and
 * put both in the environment. 0, or -1 with a message on stderr. */
int vr_run_begin(vr_run_list *rl);
/* After the program: print the run's traces on stderr ("vramtrace run:
 * trace: P" for one, "vramtrace run: N traces (run ID):" and one per line
 * for several) and remove the list file. With no_driver, the traces that
 * hold no allocation are removed instead and one line names --sim. */
void vr_run_end(vr_run_list *rl);
/* -o PATTERN before the program starts: -1 with a message when it is a bad
 * pattern, or names an existing file (removed instead with force). */
int vr_run_output_check(const char *pattern, bool force);

/* --sim=DEVICE before the program starts: -1 with a message listing the
 * profiles when DEVICE is not one of the simulated device's (asked of
 * SIMDIR/libcuda.so.1's vtsim_profiles in a child that leaves with _exit, so
 * that no destructor of the sim runs in vramtrace; sim/README.md,
 * "Identity"), else 0 (also when the sim gives no list). */
int vr_sim_profile_check(const char *simdir, const char *want);

/* The files to report: each given path, then the traces of its run that
 * carry its name with a pid inserted (vt_name_is_sibling, same run id), in
 * its directory. *out is malloc'd (strings too); free with vr_run_files_free. */
int vr_run_files(char **paths, size_t n, char ***out, size_t *nout);
void vr_run_files_free(char **files, size_t n);
/* The run section of the text report: for every run id that 2 or more of
 * the reports share, the processes side by side, each device's peak per
 * process and summed over them, and for each failed allocation the memory
 * the other processes held on its device at that moment, by call site.
 * 0 or -1 (I/O error). */
int vr_render_runs(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);
/* The same as the JSON report's "runs" member: `,"runs":[...]`, one object
 * per run (vramtrace report --json with several files): run_id; processes (pid,
 * rank or null, ppid, path, program, allocations, failed_allocations,
 * peak_allocated_bytes); devices (device, peak_allocated_bytes per process,
 * sum_of_peaks_bytes, peak_of_sum_bytes or null); failures (pid, rank,
 * device, t_ns, requested_bytes, external_bytes, verdict, held_by: pid,
 * rank, bytes, sites: bytes, count, stack_id, function, file, line). */
void vr_render_runs_json(FILE *out, vr_report *const *r, size_t n);

#endif
