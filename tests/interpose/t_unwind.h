/* t_unwind.h: shared by t_unwind.c and t_unwind_cxx.cpp. */
#ifndef T_UNWIND_H
#define T_UNWIND_H
#ifdef __cplusplus
extern "C" {
#endif
/* Compare the fast walk with libunwind here: 1 equal, 0 fell back, -1 not
 * equal (printed). */
int tu_compare(const char *what);
/* C++ exceptions thrown through frames between captures. */
void tu_cxx_exceptions(void);
#ifdef __cplusplus
}
#endif
#endif
