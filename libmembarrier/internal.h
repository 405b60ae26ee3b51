/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef LIBMEMBARRIER_INTERNAL_H
#define LIBMEMBARRIER_INTERNAL_H

#include "config.h"

#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>

/* The library defines membarrier() and membarrier_light() itself. */
#define LIBMEMBARRIER_NO_INLINE 1
#include "membarrier.h"

#define LMB_EXPORT __attribute__((visibility("default")))

/* Store the objects the header declares const (flag.c). */
void lmb_light_flag_store(int fence);
void lmb_query_answer_store(unsigned int answer);

#ifndef SYS_membarrier
# ifdef __NR_membarrier
#  define SYS_membarrier __NR_membarrier
# else
#  error "this architecture's membarrier system call number is unknown"
# endif
#endif

/*
 * The process's view of membarrier, decided once and published as two
 * 32-bit words (lock-free on every Debian architecture, no libatomic), so
 * that racing first callers need no lock: each computes the same answer
 * and the first compare-and-swap of each word wins.
 *
 * The kernel word (published first):
 *   bits  0..28  the kernel's QUERY mask, when it answered
 *   bit  29      not asked yet (LIBMEMBARRIER_HEAVY=signal|fence: asked
 *                only when the application calls QUERY itself)
 *   bit  30      QUERY failed; bits 0..15 hold its errno
 *   bit  31      the word is valid
 * The library word (published second, with release; whoever reads it with
 * acquire sees the kernel word it was derived from):
 *   bits  0..3   enum membarrier_mechanism used by membarrier_heavy()
 *   bit   4      probing skipped on request (LIBMEMBARRIER_HEAVY)
 *   bit   5      LIBMEMBARRIER_HEAVY held an unknown value
 *   bit   6      SYNC_CORE (and its registration) emulated
 *   bit   7      PRIVATE_EXPEDITED (and its registration) emulated
 *   bit  31      the word is valid
 */
typedef struct {
	uint32_t kern;
	uint32_t lib;
} lmb_state_t;

#define LMB_K_VALID		(UINT32_C(1) << 31)
#define LMB_K_FAILED		(UINT32_C(1) << 30)
#define LMB_K_UNASKED		(UINT32_C(1) << 29)
#define LMB_K_MASK		(LMB_K_UNASKED - 1)

#define LMB_L_VALID		(UINT32_C(1) << 31)
#define LMB_L_SKIPPED		(UINT32_C(1) << 4)
#define LMB_L_ENV_INVALID	(UINT32_C(1) << 5)
#define LMB_L_SYNC_CORE		(UINT32_C(1) << 6)
#define LMB_L_PRIVATE		(UINT32_C(1) << 7)

/* The words themselves (state.c). */
extern uint32_t lmb_kern_word, lmb_lib_word;

/*
 * Derived from them for membarrier()'s fast path, and published (state.c)
 * only where it applies: the kernel answered the library's QUERY, and the
 * environment did not skip it.  0 until then, or for good.
 *   lmb_fast_word               the kernel's QUERY mask: commands that go
 *                               straight to the kernel (the library
 *                               emulates only others)
 *   libmembarrier_query_answer  what QUERY returns, with LMB_Q_VALID
 *                               (exported: the header reads it inline)
 */
extern uint32_t lmb_fast_word;
#define LMB_Q_VALID		(UINT32_C(1) << 31)

/* The commands the library word says are emulated. */
static inline int lmb_lib_emulated(uint32_t lib)
{
	return ((lib & LMB_L_PRIVATE) ? MEMBARRIER_CMD_PRIVATE_EXPEDITED |
					MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED : 0) |
	       ((lib & LMB_L_SYNC_CORE) ? MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE |
					  MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE : 0);
}

/* The kernel's QUERY mask, 0 when it failed or was not asked. */
static inline int lmb_st_kmask(lmb_state_t st)
{
	return (st.kern & (LMB_K_FAILED | LMB_K_UNASKED)) ? 0 :
	       (int)(st.kern & LMB_K_MASK);
}

/* errno of the kernel's failed QUERY, or 0. */
static inline int lmb_st_kerrno(lmb_state_t st)
{
	return (st.kern & LMB_K_FAILED) ? (int)(st.kern & 0xffff) : 0;
}

static inline int lmb_st_heavy(lmb_state_t st)
{
	return (int)(st.lib & 0xf);
}

/* The state, probing on first use.  Async-signal-safe once probed. */
lmb_state_t lmb_state(void);

/*
 * The kernel's QUERY answer, asking it now if start-up did not
 * (LIBMEMBARRIER_HEAVY=signal|fence): the mask, or -errno.
 */
int lmb_kernel_query(void);

/* Commands membarrier() provides without the kernel (see state.c). */
int lmb_emulated_commands(lmb_state_t st);

/*
 * sys.c.  The raw system call: returns the kernel's result or -errno, and
 * leaves errno untouched, so the library's internal calls are
 * async-signal-safe.
 */
long lmb_syscall(long nr, long a, long b, long c, long d);
pid_t lmb_gettid(void);
int64_t lmb_now_ns(void);
/* Sleep on a private futex while *addr == val, at most ns (0: no bound). */
void lmb_futex_wait(uint32_t *addr, uint32_t val, int64_t ns);
/* Yield, then sleep a little longer as round grows. */
void lmb_pause(unsigned int round);
int lmb_kernel_at_least(long major, long minor);
int lmb_kernel_at_least3(long major, long minor, long patch);
int lmb_read_lines(long fd, char *buf, size_t size, int (*line)(char *text, void *arg),
		   void *arg);

/*
 * sigsys.c: the guard around the probe's membarrier(2) calls, against a
 * seccomp filter that traps them (SECCOMP_RET_TRAP raises SIGSYS, which
 * kills where SIGSYS has its default action).  Between enter and leave a
 * trap of membarrier(2) in the calling thread only sets the mark that
 * lmb_sigsys_trapped() reads (for good: a filter is never removed), and
 * the trapped call's result is garbage.  The guard is not taken where the
 * application handles SIGSYS itself: its handler sees the trap.
 */
struct lmb_sigsys_guard {
	sigset_t mask;		/* the thread's signal mask before */
	int held;		/* LMB_GUARD_... */
};
enum { LMB_GUARD_NONE, LMB_GUARD_NESTED, LMB_GUARD_HOLDER };
void lmb_sigsys_enter(struct lmb_sigsys_guard *g);
void lmb_sigsys_leave(struct lmb_sigsys_guard *g);
int lmb_sigsys_trapped(void);

/* Write "libmembarrier: WHAT" to stderr and abort() (die.c). */
__attribute__((noreturn)) void lmb_die(const char *what, long n1, long n2);

/*
 * membarrier(2) itself, returning the result or -errno: an inline system
 * call where this file knows the architecture's convention (no errno
 * round trip, no varargs call), lmb_syscall() elsewhere.
 */
static inline int lmb_sys_membarrier(int cmd, unsigned int flags, int cpu_id)
{
#if defined(__x86_64__) && !defined(__ILP32__)
	long ret;

	/* The kernel reads only the low 32 bits of each argument. */
	__asm__ __volatile__("syscall"
			     : "=a"(ret)
			     : "0"((long)SYS_membarrier), "D"(cmd), "S"(flags), "d"(cpu_id)
			     : "rcx", "r11", "memory");
	return (int)ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_membarrier;
	register long x0 __asm__("x0") = cmd;
	register long x1 __asm__("x1") = (long)flags;
	register long x2 __asm__("x2") = cpu_id;

	__asm__ __volatile__("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
	return (int)x0;
#else
	return (int)lmb_syscall(SYS_membarrier, cmd, (long)flags, cpu_id, 0);
#endif
}

/*
 * A command through the kernel, registering and retrying once on EPERM;
 * returns the kernel's result or -errno (kernel.c).
 */
int lmb_kernel_call(int cmd, unsigned int flags, int cpu_id);

/* The same after the kernel answered EPERM: register, retry once. */
int lmb_kernel_retry(int cmd, unsigned int flags, int cpu_id);

/* Does the kernel carry this project's series (MEMBARRIER_CMD_SHARED_EXPEDITED)? */
int lmb_series_signature(void);

/*
 * The signal mechanism (sig.h; its top-level entry points, for
 * mechanism.c only).  lmb_signal_setup() chooses the signal
 * (the one asked for, or a free one) once per process and returns it, or
 * -1 where the mechanism cannot work here.  lmb_signal_heavy() is the
 * barrier: it returns 0 after a barrier on every thread, or does not
 * return (abort with a message) when no correct barrier is possible.
 * sync_core: also make every other thread execute a core-serialising
 * instruction (emulated PRIVATE_EXPEDITED_SYNC_CORE); that one returns
 * -EAGAIN where it cannot, never aborts.
 */
int lmb_signal_setup(int requested);
void lmb_signal_prepare(void);
int lmb_signal_current(void);
int lmb_signal_heavy(int sync_core);

/* Whether the signal handler can serialise the core (sig-slot.c). */
int lmb_signal_can_sync_core(void);

/*
 * The mechanisms of membarrier_heavy() (mechanism.c), the only way
 * state.c and the public entry points reach them.
 */
/* Kernel barriers replaced by the signal mechanism at run time, so far. */
extern uint32_t lmb_mech_fallbacks;
int lmb_mech_count(void);
int lmb_mech_setup(int mechanism, int kmask, int skipped, int sig);
int lmb_mech_barrier(int mechanism);
int lmb_mech_registration(int mechanism);
int lmb_mech_shared(int mechanism);
int lmb_mech_command(int mechanism);
int lmb_mech_can_sync_core(void);
int lmb_mech_sync_core(void);
int lmb_mech_emulate(int cmd, int ret);
int lmb_mech_signal(void);
void lmb_mech_prepare(void);

/*
 * A mechanism's barrier shared with concurrent callers (coalesce.c):
 * returns 0 once a call that started after this one arrived has ended.
 * The count of calls and the switch are for the tests and benchmarks.
 */
int lmb_coalesce(int mechanism);
void lmb_coalesce_prepare(void);
uint32_t lmb_coalesce_calls(void);
void lmb_coalesce_set(int on);
uint32_t lmb_coalesce_cut(void);
uint32_t lmb_coalesce_uncounted(void);
void lmb_coalesce_patient(int on);
uintptr_t lmb_coalesce_owner(void);

#endif
