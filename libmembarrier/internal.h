/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef LIBMEMBARRIER_INTERNAL_H
#define LIBMEMBARRIER_INTERNAL_H

#include "config.h"

#include <stdint.h>
#include <sys/syscall.h>

#include "membarrier.h"

#define LMB_EXPORT __attribute__((visibility("default")))

#ifndef SYS_membarrier
# ifdef __NR_membarrier
#  define SYS_membarrier __NR_membarrier
# else
#  error "this architecture's membarrier system call number is unknown"
# endif
#endif

/*
 * The process's view of membarrier, decided once and published as a single
 * 64-bit word, so that racing first callers need no lock: each computes the
 * same answer and the first compare-and-swap wins.  Layout:
 *   bits  0..31  the kernel's QUERY mask (0 when unavailable)
 *   bits 32..39  errno of the kernel's failed QUERY (0 if it succeeded)
 *   bits 40..43  enum membarrier_mechanism used by membarrier_heavy()
 *   bit  44      probing skipped on request (LIBMEMBARRIER_HEAVY)
 *   bit  45      LIBMEMBARRIER_HEAVY held an unknown value
 *   bits 48..55  signal number of the signal mechanism
 *   bit  63      the word is valid
 * Everything else (emulated commands, registrations, light mode) derives
 * from these fields.
 */
typedef uint64_t lmb_state_t;

#define LMB_ST_VALID		(UINT64_C(1) << 63)
#define LMB_ST_SKIPPED		(UINT64_C(1) << 44)
#define LMB_ST_ENV_INVALID	(UINT64_C(1) << 45)

static inline int lmb_st_kmask(lmb_state_t st)
{
	return (int)(uint32_t)st;
}

static inline int lmb_st_kerrno(lmb_state_t st)
{
	return (int)((st >> 32) & 0xff);
}

static inline int lmb_st_heavy(lmb_state_t st)
{
	return (int)((st >> 40) & 0xf);
}

static inline int lmb_st_signal(lmb_state_t st)
{
	return (int)((st >> 48) & 0xff);
}

/* The state, probing on first use.  Async-signal-safe once probed. */
lmb_state_t lmb_state(void);

/* Commands membarrier() provides without the kernel (see membarrier.c). */
int lmb_emulated_commands(lmb_state_t st);

/* REGISTER command the chosen mechanism needs, or 0. */
int lmb_registration(int mechanism);

/*
 * The raw system call: returns the kernel's result or -errno, and leaves
 * errno untouched, so the library's internal calls are async-signal-safe.
 */
long lmb_syscall(long nr, long a, long b, long c, long d);

static inline int lmb_sys_membarrier(int cmd, unsigned int flags, int cpu_id)
{
	return (int)lmb_syscall(SYS_membarrier, cmd, (long)flags, cpu_id, 0);
}

/*
 * A command through the kernel, registering and retrying once on EPERM;
 * returns the kernel's result or -errno (membarrier.c).
 */
int lmb_kernel_call(int cmd, unsigned int flags, int cpu_id);

/* The signal mechanism (signal.c). */
int lmb_signal_setup(int requested);
int lmb_signal_barrier(int sig);

/* The heavy barrier with an explicit state (heavy.c). */
int lmb_heavy(lmb_state_t st);

#ifdef LMB_TESTING
/* Tests link an internal copy of the library without the constructor. */
void lmb_test_reset(void);
#endif

#endif
