/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The hooks of the tests' copy of the library (testing.c), for the tests
 * that link libmembarrier-testing.la. */
#ifndef LIBMEMBARRIER_TESTING_H
#define LIBMEMBARRIER_TESTING_H

/* Forget what detection published: the next call detects again. */
void lmb_test_reset(void);
/* A barrier's listing of /proc/self/task through slot 0's descriptor:
 * its length in bytes at *list, or -errno. */
long lmb_test_list(char **list);
/* The calls membarrier_heavy() made (each shared by its concurrent
 * callers), and whether they share them (1, the default) or not. */
unsigned int lmb_test_calls(void);
void lmb_test_coalesce(int on);
/* The waits for a shared call that were cut short by a call of the
 * waiter's own; and the waiters' patience: 0 as built, 1 without a bound
 * (1.5's, the control), -1 cut at once (every waiter makes its own). */
unsigned int lmb_test_cut(void);
void lmb_test_patient(int on);
/* Shared calls that ended without counting: run by a child sharing our
 * memory, where the signal mechanism replaced a failed kernel command. */
unsigned int lmb_test_uncounted(void);
/* The thread running the shared call now (its pthread_t), or 0. */
unsigned long lmb_test_owner(void);
/* Keep a thread that a signal barrier moves between CPUs (a thread that
 * blocks the signal) on the first CPU for ns nanoseconds. */
void lmb_test_force_hold(long long ns);

#endif
