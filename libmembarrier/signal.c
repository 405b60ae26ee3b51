/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The signal mechanism: a process-wide barrier without membarrier(2), for
 * kernels without it (before 4.3, CONFIG_MEMBARRIER=n) and for sandboxes
 * that refuse it.  membarrier_heavy() executes a full fence, lists the
 * threads of the process, and makes sure that each other thread either
 * executes a full fence of its own or passes through the scheduler, whose
 * full barriers order it just as well:
 *
 * (A) A thread that never runs user code again needs nothing: a zombie
 *     (the main thread after pthread_exit()), or a kernel-side member of
 *     the thread group (io_uring's SQPOLL poller, io-wq workers: flagged
 *     PF_IO_WORKER in /proc/self/task/TID/stat; they block every signal).
 * (B) A thread that is asleep (or stopped) and off its CPU needs nothing:
 *     the kernel prints /proc/self/task/TID/syscall only after waiting,
 *     with the thread's runqueue lock, until the thread is off its CPU in
 *     the sleep it was in, and prints "running" otherwise.  Everything the
 *     thread did in user mode precedes the full barrier of its switch-out
 *     (smp_mb__after_spinlock() in __schedule()), which precedes our read
 *     through that lock; whatever it does in user mode next follows the
 *     full barrier of the __schedule() that switches it back in, which
 *     follows our first fence.  It is not woken: no EINTR for sleepers.
 * (C) Any other thread (running or runnable) gets a real-time signal
 *     whose handler executes a full fence and marks the thread done.  If
 *     the handler does not come, the thread is also done once it is seen
 *     asleep and off its CPU as in (B), once its context-switch count
 *     (/proc/self/task/TID/status) has moved (it went through __schedule()
 *     after our fence), or once it has exited.
 * (D) A thread that keeps running user code with the signal blocked and
 *     is never switched out cannot be ordered from user space: after
 *     LMB_BLOCKED_LIMIT the process aborts with a message rather than
 *     return without the barrier (membarrier(3)).
 *
 * The thread list: /proc/self/task, kept open.  The kernel lists a thread
 * group by walking it, and a walk stops early at a thread that exits under
 * it; threads listed in separate getdents64() calls can be skipped when
 * threads exit in between.  So the list is read in one call (a larger
 * buffer when it does not fit), and read again when its last entry is gone
 * by then.  Threads created after the listing need nothing: the barrier of
 * their first switch-in follows our fence.  The caller's own thread id must
 * be in the list; it is not when /proc belongs to another PID namespace,
 * where the ids would name other threads.
 *
 * Why signals and not the mprotect()/madvise() TLB-shootdown trick used by
 * Folly, .NET and others: that trick relies on the kernel interrupting
 * every CPU that runs the process to invalidate TLBs.  arm64 invalidates
 * with broadcast instructions and sends no IPI, and x86 kernels that use
 * AMD's INVLPGB do the same, so the trick is silently no barrier at all on
 * exactly the new kernels a sandbox may run us on.  A signal handler runs
 * on the target thread on every architecture.
 *
 * The same handler serves the emulated MEMBARRIER_CMD_PRIVATE_EXPEDITED_
 * SYNC_CORE, and then executes a core-serialising instruction (x86 CPUID,
 * arm64 ISB).  On arm64 every return to user mode is an ERET, context
 * synchronising, so (B) and (C) hold as they are.  On x86 the return from
 * a system call may be a SYSRET, which does not serialise: every other live
 * thread, asleep or not, must run the handler (sleepers are woken), a
 * thread waiting in sigtimedwait() cannot (it would take the signal as its
 * own), and one that does not run it within LMB_BLOCKED_LIMIT aborts the
 * process with a message.
 *
 * Everything here is a system call, the stack, or static memory (and an
 * mmap()ed list buffer for processes with many threads), so
 * membarrier_heavy() stays async-signal-safe in this mode.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>

/*
 * LMB_SCHED_SYNCS_CORE: every return to user mode is context synchronising
 * (arm64: ERET), so a thread that passes through the scheduler needs no
 * handler for SYNC_CORE either.  Not on x86, whose SYSRET is not
 * serialising: there every other thread must run the handler.
 */
#if defined(__x86_64__) || defined(__i386__)
# include <cpuid.h>
# define LMB_HAVE_SYNC_CORE 1
# define LMB_SCHED_SYNCS_CORE 0
#elif defined(__aarch64__)
# define LMB_HAVE_SYNC_CORE 1
# define LMB_SCHED_SYNCS_CORE 1
#else
# define LMB_HAVE_SYNC_CORE 0
# define LMB_SCHED_SYNCS_CORE 0
#endif

#define LMB_SLOTS 64		/* concurrent barriers */
#define LMB_BATCH 64		/* threads signalled per round */
#define LMB_BLOCKED_LIMIT 10	/* seconds, see (D) */
#define LMB_BLOCKED_LIMIT_NS ((int64_t)LMB_BLOCKED_LIMIT * 1000000000)
#define LMB_MAX_RECLEN 32	/* a /proc/self/task entry with a 10-digit name */

/*
 * include/linux/sched.h, shown in /proc/PID/stat.  PF_KTHREAD has kept its
 * value since 2.6; 0x10 is PF_IO_WORKER only since io threads joined the
 * thread group (5.12): before, it was PF_VCPU, set on a KVM vCPU thread
 * that does return to user code.  lmb_pf_never_user holds what applies to
 * the running kernel (lmb_signal_setup()).
 */
#define LMB_PF_IO_WORKER 0x00000010u
#define LMB_PF_KTHREAD	 0x00200000u
static unsigned long lmb_pf_never_user = LMB_PF_KTHREAD;

/*
 * A barrier in progress owns a slot.  The signal carries the slot's index
 * (never a pointer, so a stray signal cannot make the handler write
 * anywhere).  Each round of a barrier publishes a new generation with
 * release; the handler reads it with acquire, so the thread's next user
 * code is ordered after the caller's fence, and writes it back in its own
 * thread's done[] entry.  The caller counts only entries that carry the
 * current generation, so a late handler of an earlier round, which read an
 * older generation, proves nothing and is ignored.
 */
struct lmb_slot {
	int busy;
	unsigned int gen;
	unsigned int seq;	/* handlers that ran: a futex word */
	int waiting;		/* the owner sleeps on seq */
	int count;
	int sync_core;
	pid_t tid[LMB_BATCH];
	unsigned int done[LMB_BATCH];
};

/* What a round knows of a thread it signalled (lmb_round()). */
struct lmb_target {
	pid_t tid;
	int done;
	int sent;
	int have_base;
	unsigned long base;	/* context switches when first looked at */
};

/*
 * What the owner of a slot keeps between calls, across fork() too, and
 * its working storage: static rather than on the stack, so that a heavy
 * barrier from a signal handler on a small alternate stack fits.
 */
struct lmb_own {
	int fd;			/* /proc/self/task plus one; 0 if none */
	pid_t pid;		/* the process that opened it */
	dev_t dev;
	ino_t ino;
	char *buf;		/* mmap()ed list buffer, when 2 KiB is too small */
	size_t size;
	char stack[2048] __attribute__((aligned(8)));	/* the list, usually */
	struct lmb_target t[LMB_BATCH];
};

static struct lmb_slot lmb_slots[LMB_SLOTS];
static struct lmb_own lmb_owns[LMB_SLOTS];
static int lmb_sig;		/* the signal in use; 0 until chosen */
static int lmb_atfork_done;

/*
 * Threads seen blocking the signal.  Real-time signals queue, one per
 * send, and only the target can take them: a thread that blocks ours
 * would collect one per barrier, all charged to the user's
 * RLIMIT_SIGPENDING.  A thread listed here is sent the signal only when
 * its status shows it unblocked and none of ours pending.  Lossy: when
 * the table is full, threads are sent the signal as before.
 */
#define LMB_BLOCKERS 64
static pid_t lmb_blockers[LMB_BLOCKERS];

struct lmb_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static pid_t lmb_gettid(void)
{
	return (pid_t)lmb_syscall(SYS_gettid, 0, 0, 0, 0);
}

int lmb_signal_can_sync_core(void)
{
	return LMB_HAVE_SYNC_CORE;
}

static void lmb_serialise(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a, b, c, d;

	/* CPUID is architecturally serialising in every mode. */
	__cpuid(0, a, b, c, d);
	__asm__ __volatile__("" : : "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("isb" : : : "memory");
#endif
}

/*
 * Not instrumented by AddressSanitizer: the signal can reach a thread
 * that is still starting, before ASan has cleared the shadow of a stack
 * the C library reused from an exited thread, and ASan then reports the
 * handler's read of its own siginfo (on that stack) as a bad access.
 */
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize_address))
#endif
static void lmb_signal_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (si->si_code == SI_QUEUE && si->si_value.sival_int >= 0 &&
	    si->si_value.sival_int < LMB_SLOTS) {
		struct lmb_slot *slot = &lmb_slots[si->si_value.sival_int];
		unsigned int gen = __atomic_load_n(&slot->gen, __ATOMIC_ACQUIRE);
		int count = __atomic_load_n(&slot->count, __ATOMIC_RELAXED);
		pid_t self = lmb_gettid();

		if (__atomic_load_n(&slot->sync_core, __ATOMIC_RELAXED))
			lmb_serialise();
		for (int i = 0; i < count && i < LMB_BATCH; i++) {
			unsigned int cur;

			if (__atomic_load_n(&slot->tid[i], __ATOMIC_RELAXED) != self)
				continue;
			/* Forward only: a late handler that read an older
			 * generation must not erase a newer one. */
			cur = __atomic_load_n(&slot->done[i], __ATOMIC_RELAXED);
			while ((int)(gen - cur) > 0 &&
			       !__atomic_compare_exchange_n(&slot->done[i], &cur, gen, 1,
							    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
				;
		}
		/* Wake the owner if it sleeps on seq (lmb_wait()). */
		__atomic_fetch_add(&slot->seq, 1, __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&slot->waiting, __ATOMIC_RELAXED))
			(void)lmb_syscall(SYS_futex, (long)&slot->seq, FUTEX_WAKE_PRIVATE, 1, 0);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* A child of fork() has one thread: barriers other threads had under way
 * in the parent do not exist in it.  (The descriptors in lmb_owns[] are
 * the parent's directory: lmb_task_fd() replaces them.) */
static void lmb_atfork_child(void)
{
	memset(lmb_slots, 0, sizeof(lmb_slots));
	memset(lmb_blockers, 0, sizeof(lmb_blockers));
}

static int lmb_ours(int sig)
{
	struct sigaction sa;

	return sigaction(sig, NULL, &sa) == 0 && (sa.sa_flags & SA_SIGINFO) &&
	       sa.sa_sigaction == lmb_signal_handler;
}

static int lmb_free(int sig)
{
	struct sigaction sa;
	sigset_t mask;

	if (sigaction(sig, NULL, &sa) != 0 || pthread_sigmask(SIG_BLOCK, NULL, &mask) != 0)
		return 0;
	return !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL &&
	       !sigismember(&mask, sig);
}

static long lmb_open_task_dir(void)
{
	return lmb_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/task",
			   O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
}

/* The thread id in a directory entry's name, or 0 ("." and ".."). */
static pid_t lmb_entry_tid(const struct lmb_dirent64 *d)
{
	const char *p;
	pid_t tid = 0;

	for (p = d->d_name; *p >= '0' && *p <= '9'; p++)
		tid = tid * 10 + (*p - '0');
	return *p == '\0' ? tid : 0;
}

/*
 * getdents64() stops early, as if at the end, once a signal is pending
 * for the caller (a concurrent barrier's, typically): list with every
 * signal blocked, which clears the pending state.  Raw calls: the C
 * library's would leave its own internal signals unblocked.  (SIGKILL,
 * a group stop, a freezer or io_uring's task work still cut a listing
 * short: lmb_list() checks.)
 */
static long lmb_getdents2(long fd, char *buf, size_t size, long *more)
{
	sigset_t all, old;
	long n;

	/* Every bit: sigfillset() leaves out the C library's own signals. */
	memset(&all, 0xff, sizeof(all));
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&old, _NSIG / 8);
	n = lmb_syscall(SYS_getdents64, fd, (long)buf, (long)size, 0);
	/* more: a second call from where the first stopped (lmb_list()). */
	if (more != NULL)
		*more = n < 0 || size - (size_t)n < LMB_MAX_RECLEN ? 0 :
			lmb_syscall(SYS_getdents64, fd, (long)(buf + n), (long)(size - (size_t)n), 0);
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, _NSIG / 8);
	return n;
}

static long lmb_getdents(long fd, char *buf, size_t size)
{
	return lmb_getdents2(fd, buf, size, NULL);
}

/*
 * Is the caller's own thread in /proc/self/task?  Not when /proc is from
 * another PID namespace.  (Completeness does not matter here.)
 */
static int lmb_proc_lists_self(void)
{
	char buf[1024] __attribute__((aligned(8)));
	pid_t self = lmb_gettid();
	long fd = lmb_open_task_dir(), n;
	int found = 0;

	if (fd < 0)
		return 0;
	while (!found && (n = lmb_getdents(fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < n;) {
			struct lmb_dirent64 *d = (struct lmb_dirent64 *)(buf + off);

			off += d->d_reclen;
			if (lmb_entry_tid(d) == self)
				found = 1;
		}
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	return found;
}

/*
 * Is /proc this PID namespace's?  The ids of a /proc bind-mounted from
 * another namespace can match ours by chance; NSpid names the process in
 * every namespace from the /proc's down to ours, so a single field, our
 * pid, means the same namespace.
 */
static int lmb_proc_is_ours(void)
{
	char buf[2048];
	long fd = lmb_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/status",
			      O_RDONLY | O_CLOEXEC, 0), n;
	const char *p;
	long pid = 0;

	if (fd < 0)
		return 0;
	n = lmb_syscall(SYS_read, fd, (long)buf, sizeof(buf) - 1, 0);
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strstr(buf, "\nNSpid:\t");
	if (p == NULL)
		return 1;	/* before 4.1: no namespaces to tell apart */
	for (p += 8; *p >= '0' && *p <= '9'; p++)
		pid = pid * 10 + (*p - '0');
	return *p == '\n' && pid == getpid();
}

/*
 * The real-time signals that cannot be sent here, bit sig - SIGRTMIN (at
 * most 31 of them): qemu-user (7.2) takes a handler for the emulated
 * program's two highest but has no host signal to carry them (it keeps
 * two for itself), and sending them answers EINVAL.  Found before a free
 * signal is taken (lmb_sendable()), or learnt from lmb_send(); never taken
 * again.
 */
static unsigned int lmb_unsendable;
#define LMB_UNSENDABLE (-4096)	/* lmb_send(): not an errno */

static int lmb_marked_unsendable(int sig)
{
	unsigned int bit = (unsigned int)(sig - SIGRTMIN);

	return bit < 32 && (__atomic_load_n(&lmb_unsendable, __ATOMIC_RELAXED) & (1u << bit));
}

static void lmb_mark_unsendable(int sig)
{
	unsigned int bit = (unsigned int)(sig - SIGRTMIN);

	if (bit < 32)
		__atomic_fetch_or(&lmb_unsendable, 1u << bit, __ATOMIC_RELAXED);
}

/*
 * Can the free signal sig be sent here?  It is sent to the calling thread
 * with sig blocked there (a free signal is not: lmb_free()), then taken
 * back with a sigtimedwait() that does not wait; no disposition changes,
 * as another thread may be installing one.  A thread-directed real-time
 * signal is dequeued before the process's, so exactly this one goes.
 */
static int lmb_sendable(int sig)
{
#if defined(SYS_rt_sigtimedwait) && !(defined(__x86_64__) && defined(__ILP32__))
	struct { long tv_sec, tv_nsec; } zero = { 0, 0 };
	long nr = SYS_rt_sigtimedwait;
#elif defined(SYS_rt_sigtimedwait)
	struct { long long tv_sec, tv_nsec; } zero = { 0, 0 };	/* x32 */
	long nr = SYS_rt_sigtimedwait;
#else
	struct { long long tv_sec, tv_nsec; } zero = { 0, 0 };
	long nr = SYS_rt_sigtimedwait_time64;
#endif
	sigset_t one, old;
	long ret;

	memset(&one, 0, sizeof(one));
	sigaddset(&one, sig);
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_BLOCK, (long)&one, (long)&old, _NSIG / 8);
	ret = lmb_syscall(SYS_tgkill, getpid(), lmb_gettid(), sig, 0);
	if (ret == 0)
		(void)lmb_syscall(nr, (long)&one, 0, (long)&zero, _NSIG / 8);
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, _NSIG / 8);
	if (ret == -EINVAL)
		lmb_mark_unsendable(sig);
	return ret != -EINVAL;
}

/* Install the handler on the signal asked for, or on the highest free
 * real-time signal other than `avoid` that can be sent.  Returns it, or
 * -1. */
static int lmb_install(int requested, int avoid)
{
	struct sigaction sa;
	int sig = -1;

	for (int s = requested ? requested : SIGRTMAX;
	     s >= (requested ? requested : SIGRTMIN); s--) {
		if (s != avoid && !lmb_marked_unsendable(s) &&
		    (lmb_ours(s) || (lmb_free(s) && lmb_sendable(s)))) {
			sig = s;
			break;
		}
	}
	if (sig < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = lmb_signal_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0)
		return -1;
	return sig;
}

/*
 * From the constructor: pthread_atfork() is not async-signal-safe, and the
 * signal mechanism may first be needed in a signal handler (a kernel
 * command refused at run time).
 */
void lmb_signal_prepare(void)
{
	if (!__atomic_exchange_n(&lmb_atfork_done, 1, __ATOMIC_ACQ_REL))
		(void)pthread_atfork(NULL, NULL, lmb_atfork_child);
}

/* Publish sig in place of old; a racing thread may have published first. */
static int lmb_publish(int old, int sig)
{
	int cur = old;

	if (__atomic_compare_exchange_n(&lmb_sig, &cur, sig, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
#ifdef LMB_TESTING
		lmb_signal_prepare();	/* no constructor in the tests' copy */
#endif
		return sig;
	}
	/* Another thread chose first: give back the signal we took. */
	if (cur != sig) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		(void)sigaction(sig, &sa, NULL);
	}
	return cur;
}

/*
 * Choose the signal once per process: the one asked for
 * (LIBMEMBARRIER_SIGNAL), else the highest real-time signal that nobody
 * handles or blocks (applications tend to take them from SIGRTMIN up).
 * Returns it, or -1 where the mechanism cannot work.
 */
int lmb_signal_setup(int requested)
{
	int sig = __atomic_load_n(&lmb_sig, __ATOMIC_ACQUIRE);
	struct utsname u;

	if (sig > 0)
		return sig;
	if (!lmb_proc_lists_self() || !lmb_proc_is_ours())
		return -1;
	if (uname(&u) == 0) {
		const char *p = u.release;
		long major = 0, minor = 0;

		while (*p >= '0' && *p <= '9')
			major = major * 10 + (*p++ - '0');
		if (*p == '.')
			for (p++; *p >= '0' && *p <= '9'; p++)
				minor = minor * 10 + (*p - '0');
		if (major > 5 || (major == 5 && minor >= 12))
			__atomic_store_n(&lmb_pf_never_user, LMB_PF_KTHREAD | LMB_PF_IO_WORKER,
					 __ATOMIC_RELAXED);
	}
	sig = lmb_install(requested, 0);
	if (sig < 0)
		return -1;
	return lmb_publish(0, sig);
}

int lmb_signal_current(void)
{
	return __atomic_load_n(&lmb_sig, __ATOMIC_ACQUIRE);
}

/*
 * Waiting: the C library's sched_yield() and nanosleep() rather than raw
 * system calls, so that tools that interpose on them see a waiting thread
 * (ThreadSanitizer delivers pending signals only inside functions it
 * intercepts; with raw system calls two concurrent heavy barriers would
 * wait for each other's signals forever under it).  errno is preserved.
 */
static void lmb_pause(unsigned int round)
{
	struct timespec ts = { 0, 0 };
	int saved = errno;

	if (round < 64) {
		(void)sched_yield();
	} else {
		/* A slow target (preempted, sleeping in the kernel): back off. */
		ts.tv_nsec = round < 1024 ? 20000 : 1000000;
		(void)nanosleep(&ts, NULL);
	}
	errno = saved;
}

/* How long lmb_wait() polls before it sleeps: a running target on another
 * CPU runs the handler in a few microseconds (about 8 on a 2-CPU VM). */
#define LMB_POLL_NS 20000

/* CLOCK_MONOTONIC in nanoseconds: 64 bits on 32-bit architectures too. */
static int64_t lmb_now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Wait in a round of lmb_round(): until a handler runs (each one moves
 * slot->seq and wakes the owner) or for a while.  Sleeping rather than
 * yielding leaves the CPU to a target that was preempted, on a machine
 * with fewer CPUs than runnable threads.  Every eighth round, and after
 * the first thousand, lmb_pause() instead (see there).  Returns 1 if a
 * handler ran since seq was read, 0 after a timeout.
 */
static int lmb_wait(struct lmb_slot *slot, unsigned int seq, unsigned int round)
{
#if defined(__x86_64__) && defined(__ILP32__)
	struct { long long tv_sec, tv_nsec; } ts = { 0, 0 };	/* x32 */
#else
	struct { long tv_sec, tv_nsec; } ts = { 0, 0 };		/* the kernel's timespec */
#endif
	long ret;

	if (round == 0) {
		/* A running target takes a few microseconds: poll first. */
		int64_t t0 = lmb_now_ns();

		while (__atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) == seq)
			if (lmb_now_ns() - t0 > LMB_POLL_NS)
				return 0;
		return 1;
	}
	if (round % 8 == 7 || round >= 1024) {
		lmb_pause(round);
		return __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE) != seq;
	}
	ts.tv_nsec = round < 64 ? 50000 : 200000;
	__atomic_store_n(&slot->waiting, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	ret = lmb_syscall(SYS_futex, (long)&slot->seq, FUTEX_WAIT_PRIVATE, (long)seq, (long)&ts);
	__atomic_store_n(&slot->waiting, 0, __ATOMIC_RELAXED);
	return ret != -ETIMEDOUT;
}

static struct lmb_slot *lmb_slot_get(int *index)
{
	for (;;) {
		for (int i = 0; i < LMB_SLOTS; i++) {
			if (!__atomic_exchange_n(&lmb_slots[i].busy, 1, __ATOMIC_ACQUIRE)) {
				*index = i;
				return &lmb_slots[i];
			}
		}
		lmb_pause(0);
	}
}

/*
 * The slot's descriptor of /proc/self/task, opened once and kept: a
 * process at its descriptor limit, or one that unmounts /proc later, still
 * gets its barrier.  It is replaced when it belongs to the parent of a
 * fork(), or when the application closed it (and perhaps reused the
 * number: then it is not ours to close).  Returns it or -errno.
 */
static long lmb_task_fd(struct lmb_own *own)
{
	pid_t pid = getpid();
	struct stat st;
	long fd;

	if (own->fd > 0) {
		int same = fstat(own->fd - 1, &st) == 0 && st.st_dev == own->dev &&
			   st.st_ino == own->ino;

		if (same && own->pid == pid)
			return own->fd - 1;
		if (same)
			(void)lmb_syscall(SYS_close, own->fd - 1, 0, 0, 0);
		own->fd = 0;
	}
	fd = lmb_open_task_dir();
	if (fd < 0)
		return fd;
	if (fstat((int)fd, &st) != 0) {
		long err = -errno;

		(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
		return err;
	}
	own->fd = (int)fd + 1;
	own->pid = pid;
	own->dev = st.st_dev;
	own->ino = st.st_ino;
	return fd;
}

/*
 * The whole thread list in one getdents64() call: returns its length in
 * bytes at *list, or -errno.  The call fills the buffer while entries fit
 * (and no signal is pending, see lmb_getdents()), so a call that left
 * less room than the longest entry (a 10-digit name) may have been cut
 * short by the buffer: a larger one is mapped, up to 64 MiB (two million
 * threads).  A second call, from where the first stopped, must then find
 * nothing: entries there mean the walk stopped early (a signal-like
 * event, or a thread that exited under it, fs/proc/base.c) or threads
 * created since, and the whole list is read again.  Whether the walk
 * stopped at its last entry because that thread exited is the caller's
 * check.
 */
#define LMB_MAX_LIST (64UL << 20)
static long lmb_list(struct lmb_own *own, long fd, char **list)
{
	char *buf = own->buf ? own->buf : own->stack;
	size_t size = own->buf ? own->size : sizeof(own->stack);

	for (unsigned int attempt = 0;; attempt++) {
		long n, more;

		if (lmb_syscall(SYS_lseek, fd, 0, SEEK_SET, 0) < 0)
			return -EIO;
		n = lmb_getdents2(fd, buf, size, &more);
		if (n < 0)
			return n;
		if (size - (size_t)n >= LMB_MAX_RECLEN) {
			if (more == 0) {
				*list = buf;
				return n;
			}
			if (more > 0 || more == -EINVAL) {
				lmb_pause(attempt);	/* stopped early: again */
				continue;
			}
			return more;
		}
		/* Too small: 64 KiB (about 2000 threads), then doubling. */
		size = own->buf ? own->size * 2 : 65536;
		if (size > LMB_MAX_LIST)
			return -ENOMEM;
		if (own->buf)
			(void)munmap(own->buf, own->size);
		own->buf = NULL;
		buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED)
			return -ENOMEM;
		own->buf = buf;
		own->size = size;
	}
}

/* "TID/LEAF" in name (32 bytes), a path under /proc/self/task. */
static void lmb_leaf_name(char *name, pid_t tid, const char *leaf)
{
	char digits[12];
	int nd = 0, i = 0;

	do {
		digits[nd++] = (char)('0' + tid % 10);
		tid /= 10;
	} while (tid > 0);
	while (nd > 0)
		name[i++] = digits[--nd];
	name[i++] = '/';
	while (*leaf && i < 31)
		name[i++] = *leaf++;
	name[i] = '\0';
}

/* Read /proc/self/task/TID/LEAF (dirfd: /proc/self/task) into buf, NUL
 * terminated; returns the length or -errno. */
static long lmb_read_leaf(long dirfd, pid_t tid, const char *leaf, char *buf, size_t size)
{
	char name[32];
	long fd, n;

	lmb_leaf_name(name, tid, leaf);
	fd = lmb_syscall(SYS_openat, dirfd, (long)name, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	n = lmb_syscall(SYS_read, fd, (long)buf, (long)size - 1, 0);
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	if (n < 0)
		return n;
	buf[n] = '\0';
	return n;
}

/* (B): asleep or stopped, and off its CPU; see the comment at the top. */
static int lmb_off_cpu(long dirfd, pid_t tid)
{
	char buf[96];
	long n = lmb_read_leaf(dirfd, tid, "syscall", buf, sizeof(buf));

	if (n > 0)
		return strncmp(buf, "running", 7) != 0;
	if (n == -ENOENT)
		return 0;
	/*
	 * syscall is 0400: a process that is not dumpable (it changed
	 * credentials, or PR_SET_DUMPABLE) cannot read its own.  wchan is
	 * 0444, and the kernel names a wait channel only for a thread that is
	 * asleep and off its runqueue, read under the thread's pi_lock, which
	 * its wake-up takes too (get_wchan()); "0" otherwise, or where it
	 * cannot name it: then the thread is signalled.
	 */
	n = lmb_read_leaf(dirfd, tid, "wchan", buf, sizeof(buf));
	return n > 0 && !(buf[0] == '0' && buf[1] == '\0');
}

enum { LMB_DONE, LMB_SIGNAL };

/* Is the thread asleep in sigtimedwait() (it would consume the signal
 * if it waits for it, and never run the handler)? */
static int lmb_in_sigwait(long dirfd, pid_t tid)
{
	char buf[96];
	long nr = 0;
	const char *p = buf;

	if (lmb_read_leaf(dirfd, tid, "syscall", buf, sizeof(buf)) <= 0)
		return 0;
	while (*p >= '0' && *p <= '9')
		nr = nr * 10 + (*p++ - '0');
	if (p == buf || *p != ' ')
		return 0;
#ifdef SYS_rt_sigtimedwait_time64
	if (nr == SYS_rt_sigtimedwait_time64)
		return 1;
#endif
#ifdef SYS_rt_sigtimedwait
	if (nr == SYS_rt_sigtimedwait)
		return 1;
#endif
	return 0;
}

/* (A): exited, a zombie, or a thread that never runs user code. */
static int lmb_never_user(long dirfd, pid_t pid, pid_t tid)
{
	char buf[256];
	unsigned long flags = 0;
	const char *p;
	int field;

	if (lmb_read_leaf(dirfd, tid, "stat", buf, sizeof(buf)) <= 0)
		return lmb_syscall(SYS_tgkill, pid, tid, 0, 0) == -ESRCH;
	/* "tid (comm) S ppid pgrp session tty tpgid flags ...": the name
	 * may hold anything, the fields after the last ')' cannot. */
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return 0;
	p += 2;
	if (*p == 'Z' || *p == 'X')
		return 1;
	for (field = 3; field < 9 && *p; p++)
		if (*p == ' ')
			field++;
	while (*p >= '0' && *p <= '9')
		flags = flags * 10 + (unsigned long)(*p++ - '0');
	return field == 9 && (flags & __atomic_load_n(&lmb_pf_never_user, __ATOMIC_RELAXED));
}

/*
 * What a listed thread needs, read after the caller's fence.  strict: it
 * must run the handler (SYNC_CORE where the scheduler does not serialise).
 * A running thread is signalled at once; whether it is one that never runs
 * user code (A) is asked only if its handler does not come (lmb_round).
 */
static int lmb_classify(long dirfd, pid_t pid, pid_t tid, int strict, int sig)
{
	if (!strict)
		return lmb_off_cpu(dirfd, tid) ? LMB_DONE : LMB_SIGNAL;	/* (B) */
	if (lmb_in_sigwait(dirfd, tid))
		lmb_die("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE): thread %ld "
			"waits in sigtimedwait(), so it cannot run the handler of signal %ld",
			tid, sig);
	return lmb_never_user(dirfd, pid, tid) ? LMB_DONE : LMB_SIGNAL;
}

struct lmb_status {
	unsigned long switches;	/* voluntary + nonvoluntary */
	int blocked;		/* the signal is blocked */
	int pending;		/* the signal is pending for this thread */
	int found;		/* all four lines were there */
};

/* Bit sig of a /proc status mask ("0000000000000200"). */
static int lmb_mask_has(const char *hex, int sig)
{
	size_t len = strlen(hex), bit = (size_t)sig - 1;
	char c;
	int v;

	if (bit / 4 >= len)
		return 0;
	c = hex[len - 1 - bit / 4];
	v = c >= 'a' ? c - 'a' + 10 : c - '0';
	return (v >> (bit % 4)) & 1;
}

/* From /proc/self/task/TID/status: the context switches and whether sig is
 * blocked.  Read line by line: a line too long for the buffer (CPU and
 * node masks of large machines) is skipped. */
static int lmb_read_status(long dirfd, pid_t tid, int sig, struct lmb_status *out)
{
	char buf[512], name[32];
	size_t have = 0;
	int skipping = 0, n_found = 0;
	long fd;

	lmb_leaf_name(name, tid, "status");
	fd = lmb_syscall(SYS_openat, dirfd, (long)name, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return (int)fd;
	memset(out, 0, sizeof(*out));
	for (;;) {
		long n = lmb_syscall(SYS_read, fd, (long)(buf + have), (long)(sizeof(buf) - have), 0);
		char *line = buf, *nl;

		if (n <= 0)
			break;
		have += (size_t)n;
		while ((nl = memchr(line, '\n', have - (size_t)(line - buf))) != NULL) {
			*nl = '\0';
			if (skipping) {
				skipping = 0;
			} else if (strncmp(line, "SigBlk:\t", 8) == 0) {
				out->blocked = lmb_mask_has(line + 8, sig);
				n_found++;
			} else if (strncmp(line, "SigPnd:\t", 8) == 0) {
				out->pending = lmb_mask_has(line + 8, sig);
				n_found++;
			} else if (strncmp(line, "voluntary_ctxt_switches:\t", 25) == 0 ||
				   strncmp(line, "nonvoluntary_ctxt_switches:\t", 28) == 0) {
				const char *q = strchr(line, '\t') + 1;
				unsigned long v = 0;

				while (*q >= '0' && *q <= '9')
					v = v * 10 + (unsigned long)(*q++ - '0');
				out->switches += v;
				n_found++;
			}
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf)) {
			have = 0;	/* an overlong line: drop it */
			skipping = 1;
		}
	}
	(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	out->found = n_found == 4;
	return 0;
}


static int lmb_blocker_find(pid_t tid)
{
	for (int i = 0; i < LMB_BLOCKERS; i++)
		if (__atomic_load_n(&lmb_blockers[i], __ATOMIC_RELAXED) == tid)
			return i;
	return -1;
}

static void lmb_blocker_add(pid_t tid)
{
	if (lmb_blocker_find(tid) >= 0)
		return;
	for (int i = 0; i < LMB_BLOCKERS; i++) {
		pid_t none = 0;

		if (__atomic_compare_exchange_n(&lmb_blockers[i], &none, tid, 0,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return;
	}
}

static void lmb_blocker_del(pid_t tid)
{
	int i = lmb_blocker_find(tid);

	if (i >= 0)
		(void)__atomic_compare_exchange_n(&lmb_blockers[i], &tid, 0, 0,
						  __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/*
 * Should t be sent the signal?  Not a known blocker whose status shows
 * ours already pending (it would queue a second), nor, unless strict, one
 * that still blocks it: (B), (C) and (D) serve it.  The status read is
 * after the caller's fence: a fine base for the context-switch count.
 */
static int lmb_should_send(long dirfd, struct lmb_target *t, int sig, int strict)
{
	struct lmb_status s;

	if (lmb_blocker_find(t->tid) < 0)
		return 1;
	if (lmb_read_status(dirfd, t->tid, sig, &s) != 0 || !s.found) {
		lmb_blocker_del(t->tid);
		return 1;
	}
	t->have_base = 1;
	t->base = s.switches;
	if (s.pending || (s.blocked && !strict))
		return 0;
	if (!s.blocked)
		lmb_blocker_del(t->tid);
	return 1;
}

/* Queue the signal to t; 0, or -errno. */
static int lmb_send(struct lmb_target *t, int sig, pid_t pid, uid_t uid, int index,
		    int64_t start, long dirfd)
{
	siginfo_t info;
	long ret;

	memset(&info, 0, sizeof(info));
	info.si_signo = sig;
	info.si_code = SI_QUEUE;
	info.si_pid = pid;
	info.si_uid = uid;
	info.si_value.sival_int = index;
	t->sent = 1;
	while ((ret = lmb_syscall(SYS_rt_tgsigqueueinfo, pid, t->tid, sig,
				  (long)&info)) == -EAGAIN) {
		/* The real-time signal queue is full. */
		if (lmb_now_ns() - start > LMB_BLOCKED_LIMIT_NS)
			lmb_die("membarrier_heavy: cannot queue signal %ld to thread %ld: "
				"the real-time signal queue stayed full for 10 s", sig, t->tid);
		lmb_pause(64);
	}
	if (ret == -ESRCH) {
		t->done = 1;	/* exited: needs nothing */
		lmb_blocker_del(t->tid);
	} else if (ret == -EINVAL) {
		return LMB_UNSENDABLE;	/* a valid signal: it cannot be sent here */
	} else if (ret < 0 && lmb_never_user(dirfd, pid, t->tid)) {
		t->done = 1;	/* never runs user code */
	} else if (ret < 0) {
		return (int)ret;
	}
	return 0;
}

/* Signal the batch in the slot and wait until each target is done.
 * Returns 0 or -errno. */
static int lmb_round(struct lmb_slot *slot, int index, struct lmb_target *t, int count,
		     int sig, pid_t pid, long dirfd, int sync_core, int strict)
{
	unsigned int gen = __atomic_load_n(&slot->gen, __ATOMIC_RELAXED) + 1;
	int64_t start = lmb_now_ns();
	uid_t uid = getuid();

	if (gen == 0)
		gen = 1;
	__atomic_store_n(&slot->count, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < count; i++) {
		__atomic_store_n(&slot->done[i], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->tid[i], t[i].tid, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&slot->sync_core, sync_core, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->count, count, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->gen, gen, __ATOMIC_RELEASE);

	for (int i = 0; i < count; i++) {
		int ret;

		if (!lmb_should_send(dirfd, &t[i], sig, strict))
			continue;
		ret = lmb_send(&t[i], sig, pid, uid, index, start, dirfd);
		if (ret < 0)
			return ret;
	}

	for (unsigned int round = 0, check = 0;; round++) {
		unsigned int seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
		int pending = 0;

		for (int i = 0; i < count; i++) {
			struct lmb_status s;

			if (t[i].done)
				continue;
			if (__atomic_load_n(&slot->done[i], __ATOMIC_ACQUIRE) == gen) {
				t[i].done = 1;
				continue;
			}
			pending++;
			if (round == 4 && lmb_never_user(dirfd, pid, t[i].tid)) {
				t[i].done = 1;	/* (A) */
				pending--;
				continue;
			}
			if (!check)
				continue;
			/* The application took the signal under way: start over. */
			if (!lmb_ours(sig))
				return -EBUSY;
			/* No handler yet: exited, asleep, or switched out? */
			if (lmb_syscall(SYS_tgkill, pid, t[i].tid, 0, 0) == -ESRCH ||
			    (!strict && lmb_off_cpu(dirfd, t[i].tid))) {
				t[i].done = 1;
				pending--;
				continue;
			}
			if (strict && lmb_now_ns() - start > LMB_BLOCKED_LIMIT_NS)
				lmb_die("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE): "
					"thread %ld has not run the handler of signal %ld for 10 s "
					"(it blocks the signal, or is stopped)", t[i].tid, sig);
			if (round < 64 || lmb_read_status(dirfd, t[i].tid, sig, &s) != 0 || !s.found)
				continue;
			if (!t[i].have_base) {
				t[i].have_base = 1;
				t[i].base = s.switches;
			} else if (!strict && s.switches != t[i].base) {
				t[i].done = 1;	/* (C): through __schedule() */
				pending--;
				continue;
			}
			if (s.blocked)
				lmb_blocker_add(t[i].tid);
			/* Not sent (it blocked the signal), and now unblocked
			 * with none of ours pending: send it now. */
			if (!t[i].sent && !s.blocked && !s.pending) {
				int ret = lmb_send(&t[i], sig, pid, uid, index, start, dirfd);

				if (ret < 0)
					return ret;
				continue;
			}
			if (s.blocked && lmb_now_ns() - start > LMB_BLOCKED_LIMIT_NS)
				lmb_die("membarrier_heavy: thread %ld runs with signal %ld blocked "
					"and was not switched out for 10 s", t[i].tid, sig);
		}
		if (pending == 0)
			return 0;
		/* Look closer when no handler came for a while. */
		check = !lmb_wait(slot, seq, round) || round % 16 == 15;
	}
}

/*
 * One barrier over the other threads with signal sig.  Returns 0, or
 * -EBUSY (the application replaced the handler), LMB_UNSENDABLE (the
 * signal cannot be sent here), -ESRCH (the caller is not in
 * /proc/self/task), or another -errno (/proc unusable).
 */
static int lmb_signal_barrier(int sig, int sync_core)
{
	struct lmb_target *t;
	pid_t pid = getpid(), self = lmb_gettid();
	struct lmb_slot *slot;
	struct lmb_own *own;
	int index, ret = 0, count = 0;
	int strict = sync_core && !LMB_SCHED_SYNCS_CORE;
	char *list = NULL;
	long fd, n = 0;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!lmb_ours(sig))
		return -EBUSY;
	slot = lmb_slot_get(&index);
	own = &lmb_owns[index];
	t = own->t;
	fd = lmb_task_fd(own);
	if (fd < 0) {
		ret = (int)fd;
		goto out;
	}

	for (unsigned int attempt = 0;; attempt++) {
		pid_t last = 0;
		int found = 0;

		n = lmb_list(own, fd, &list);
		if (n < 0) {
			ret = (int)n;
			goto out;
		}
		for (long off = 0; off < n;) {
			struct lmb_dirent64 *d = (struct lmb_dirent64 *)(list + off);
			pid_t tid = lmb_entry_tid(d);

			off += d->d_reclen;
			if (tid > 0)
				last = tid;
			if (tid == self)
				found = 1;
		}
		/* The walk may have stopped early at its last entry if that
		 * thread exited under it: then list again. */
		if (last != self && last > 0 &&
		    lmb_syscall(SYS_tgkill, pid, last, 0, 0) == -ESRCH) {
			lmb_pause(attempt);
			continue;
		}
		if (!found) {
			ret = -ESRCH;
			goto out;
		}
		break;
	}

	for (long off = 0; off < n && ret == 0;) {
		struct lmb_dirent64 *d = (struct lmb_dirent64 *)(list + off);
		pid_t tid = lmb_entry_tid(d);

		off += d->d_reclen;
		if (tid <= 0 || tid == self ||
		    lmb_classify(fd, pid, tid, strict, sig) == LMB_DONE)
			continue;
		t[count].tid = tid;
		t[count].done = 0;
		t[count].sent = 0;
		t[count].have_base = 0;
		if (++count == LMB_BATCH) {
			ret = lmb_round(slot, index, t, count, sig, pid, fd, sync_core, strict);
			count = 0;
		}
	}
	if (count > 0 && ret == 0)
		ret = lmb_round(slot, index, t, count, sig, pid, fd, sync_core, strict);

out:
	__atomic_store_n(&slot->count, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->busy, 0, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return ret;
}

/*
 * The barrier, never failing: a handler the application replaced makes us
 * move to another free signal; anything else leaves no correct barrier.
 */
int lmb_signal_heavy(int sync_core)
{
	/* fstat(), sigaction(), mmap() may set errno on the way. */
	int saved = errno;

	for (;;) {
		int sig = lmb_signal_current(), ret;

		if (sig <= 0)
			sig = lmb_signal_setup(0);
		if (sig <= 0)
			lmb_die("membarrier_heavy: the signal mechanism cannot work here "
				"(no /proc/self/task listing this thread, or no free real-time "
				"signal)", 0, 0);
		if (sync_core)
			lmb_serialise();
		ret = lmb_signal_barrier(sig, sync_core);
		if (ret == 0) {
			errno = saved;
			return 0;
		}
		if (ret == -EBUSY || ret == LMB_UNSENDABLE) {
			/*
			 * Taken by the application, or it cannot be sent here
			 * (no target got it): another signal, if one is free.
			 */
			int next;

			if (ret == LMB_UNSENDABLE)
				lmb_mark_unsendable(sig);
			next = lmb_install(0, sig);
			if (next < 0)
				lmb_die(ret == -EBUSY ?
					"membarrier_heavy: the application took signal %ld and no "
					"other real-time signal is free" :
					"membarrier_heavy: signal %ld cannot be sent here and no other "
					"real-time signal that can is free", sig, 0);
			(void)lmb_publish(sig, next);
			continue;
		}
		if (ret == -ESRCH)
			lmb_die("membarrier_heavy: this thread (%ld) is not in /proc/self/task "
				"(a /proc of another PID namespace?)", lmb_gettid(), 0);
		lmb_die("membarrier_heavy: cannot list the threads in /proc/self/task "
			"or signal them (errno %ld)", -ret, 0);
	}
}
