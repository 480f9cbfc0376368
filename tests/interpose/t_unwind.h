/* t_unwind.h: shared by t_unwind.c, t_unwind_compare.c and t_unwind_cxx.cpp. */
#ifndef T_UNWIND_H
#define T_UNWIND_H
#ifdef __cplusplus
extern "C" {
#endif
/* Compare the fast walk with libunwind here: 1 equal, 0 fell back, -1 not
 * equal (printed). */
int tu_compare(const char *what);
/* --corrupt: change one frame of the fifth fast capture (the check must fail). */
void tu_set_corrupt(int on);
/* Set while a signal handler runs (its captures must never be the walk's). */
void tu_set_in_signal(int on);
/* Print the counters; 0 when every check held, 1 otherwise. */
int tu_summary(void);
/* C++ exceptions thrown through frames between captures. */
void tu_cxx_exceptions(void);
#ifdef __cplusplus
}
#endif
#endif
