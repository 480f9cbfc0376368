/* run_internal.h: report/ internals for runs of several processes (a
 * launcher and its children, ranks): the JSON side of run_report.c, for
 * render_json.c. Private to report/ (the text side, vr_render_runs, is in
 * report.h; which files make a run is cli/run_files.c's). */
#ifndef VRAMTRACE_REPORT_RUN_INTERNAL_H
#define VRAMTRACE_REPORT_RUN_INTERNAL_H

#include "report.h"

/* The JSON report's "runs" member: `,"runs":[...]`, one object per run
 * (vramtrace report --json with several files): run_id; processes (pid,
 * rank or null, ppid, path, program, allocations, failed_allocations,
 * peak_allocated_bytes); devices (device, peak_allocated_bytes per process,
 * sum_of_peaks_bytes, peak_of_sum_bytes or null, peak_of_sum_held_bytes
 * or null: the same with each process whose end was not recorded holding
 * its memory to the run's end, so that the true peak of the sum lies
 * between the two); failures (pid, rank,
 * device, t_ns, requested_bytes, external_bytes, verdict, held_by: pid,
 * rank, bytes, sites: bytes, count, stack_id, function, file, line). */
void vr_render_runs_json(FILE *out, vr_report *const *r, size_t n);

#endif
