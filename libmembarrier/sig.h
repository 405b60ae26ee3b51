/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The signal mechanism's internal interface: a process-wide barrier
 * without membarrier(2), for kernels without it (before 4.3,
 * CONFIG_MEMBARRIER=n) and for sandboxes that refuse it.
 * membarrier_heavy() executes a full fence, lists the threads of the
 * process, and makes sure that each other thread either executes a full
 * fence of its own or passes through the scheduler, whose full barriers
 * order it just as well:
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
 *     whose handler executes a full fence and marks the thread done,
 *     unless its status shows the signal blocked: a queued signal would
 *     stay pending, survive execve() and kill the next program.  If
 *     the handler does not come, the thread is also done once it is seen
 *     asleep and off its CPU as in (B), once its context-switch count
 *     (/proc/self/task/TID/status) has moved (it went through __schedule()
 *     after our fence), or once it has exited.
 * (D) A thread that is not done within LMB_FORCE_NS and gets no handler
 *     (it blocks the signal, or its state cannot be read) is moved, for a
 *     moment, to one CPU a, then to another, b, and given back its CPU
 *     affinity (lmb_force_switch()): the second move either has the
 *     kernel's stopper switch it out through __schedule() or finds it off
 *     its CPU under its runqueue lock, as in (B).  Where that cannot be
 *     done (one CPU it may use, EPERM) and nothing else shows it done
 *     after LMB_BLOCKED_LIMIT, the process aborts with a message rather
 *     than return without the barrier (membarrier(3)).
 *
 * The thread list: /proc/self/task, kept open, and its link count.  The
 * kernel lists a thread group by walking it, and a walk ends early at a
 * thread that exits under it (proc_task_readdir(): next_tid() stops at a
 * thread no longer alive), so a list can lack a thread that lives
 * throughout, with nothing in the list to tell.  The count tells: the
 * directory's st_nlink is 2 + get_nr_threads() (proc_task_getattr()), and
 * the kernel adds a thread to the group and counts it, and uncounts it and
 * removes it, in one critical section under the group's siglock
 * (copy_process(), __exit_signal()).  A barrier reads the list L in one
 * getdents64() call (no thread listed twice), fstat()s the directory for
 * the count N, walks the group again, and takes L when N threads are in
 * both walks.  Before the fstat() and before the second walk it takes and
 * releases the siglock (rt_sigpending()): a thread the first walk saw is
 * in N, and one whose removal N saw is not in the second walk.  Then:
 *   - A thread in both walks was in the group when N was read: before
 *     (the first walk saw it) and after (the second did), and a thread is
 *     in the group for one interval of time.  So at most N threads are in
 *     both, and N of them means that every thread in the group when N was
 *     read is in L.  (A second walk cut short, or repeating itself over
 *     several calls, only finds fewer.)
 *   - A thread that needs the barrier was in the group at our fence (one
 *     created later needs nothing: the barrier of its first switch-in
 *     follows our fence).  If it left the group before N was read, it has
 *     exited and needs nothing; otherwise it was counted, so it is in L.
 * A shortfall (a thread started between the first walk and the count, or
 * ended between the count and the second walk, or one missing) means
 * reading again: only a process whose threads start or end about as often
 * as a walk takes, all the time, has its list read many times.  (Assumed:
 * a thread id is not reused within one listing; Linux hands ids out in
 * turn up to pid_max.)  The caller's own thread id must be in the list; it
 * is not when /proc belongs to another PID namespace, where the ids would
 * name other threads.  Setup checks once that the link count counts
 * threads as Linux's does (with none starting or ending, exactly the
 * threads listed), or the mechanism is not used here.
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
 * own): it, or a thread that does not run the handler within
 * LMB_BLOCKED_LIMIT, makes the call fail with EAGAIN (membarrier() may
 * fail: membarrier(3)).
 *
 * The files, bottom up, each calling only the ones before it:
 *   sig-slot.c    the slot table of barriers in progress, and the handler
 *   sig-fd.c      descriptors held in reserve for a process at its limit
 *   sig-thread.c  what /proc/self/task/TID tells of one thread, and
 *                 which threads ran at the last barriers
 *   sig-list.c    the listing of /proc/self/task, and whether it is ours
 *   sig-choose.c  choosing, probing and installing the signal; fork
 *   sig-round.c   a barrier: classify, signal, wait
 *
 * Everything here is a system call, the stack, or static memory (and an
 * mmap()ed list buffer for processes with many threads), so
 * membarrier_heavy() stays async-signal-safe in this mode.
 */
#ifndef LIBMEMBARRIER_SIG_H
#define LIBMEMBARRIER_SIG_H

#include "internal.h"

#include <signal.h>
#include <sys/types.h>

/*
 * LMB_SCHED_SYNCS_CORE: every return to user mode is context synchronising
 * (arm64: ERET), so a thread that passes through the scheduler needs no
 * handler for SYNC_CORE either.  Not on x86, whose SYSRET is not
 * serialising: there every other thread must run the handler.
 */
#if defined(__x86_64__) || defined(__i386__)
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
#define LMB_FORCE_NS 20000000	/* 20 ms without a switch: force one, see (D) */
#define LMB_MAX_RECLEN 32	/* a /proc/self/task entry with a 10-digit name */

/*
 * A barrier in progress owns a slot.  The signal carries nothing (it is
 * sent with tgkill()): the handler looks for its own thread id in the
 * slots in use, so a stray signal can make it write only where its thread
 * is listed.  Each round of a barrier publishes a new generation with
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
	int unread;		/* not classified: its status decides (sig-round.c) */
	unsigned long base;	/* context switches when first looked at */
	int forced_err;		/* the last lmb_force_switch(): 0 or -errno */
	int64_t forced;		/* when it was tried (lmb_now_ns()), or 0 */
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

struct lmb_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

struct lmb_status {
	unsigned long switches;	/* voluntary + nonvoluntary */
	int blocked;		/* the signal is blocked */
	int pending;		/* the signal is pending for this thread */
	int found;		/* all four lines were there */
	int running;		/* "State:\tR": running or runnable */
};

#define LMB_UNSENDABLE (-4096)	/* lmb_send(): not an errno */

/* sig-slot.c */
extern struct lmb_slot lmb_slots[LMB_SLOTS];
void lmb_signal_handler(int sig, siginfo_t *si, void *uc);
void lmb_serialise(void);
struct lmb_slot *lmb_slot_get(int *index);
struct lmb_slot *lmb_slot_wait(int index, int64_t limit_ns);
void lmb_slot_put(struct lmb_slot *slot);
void lmb_slots_reset(void);

/* sig-fd.c */
void lmb_reserve_setup(void);
int lmb_reserve_take(int keep);
void lmb_reserve_give(void);
void lmb_reserve_reset(void);

/* sig-thread.c */
void lmb_thread_setup(void);
long lmb_read_leaf(long dirfd, pid_t tid, const char *leaf, char *buf, size_t size);
int lmb_off_cpu(long dirfd, pid_t tid);
int lmb_in_sigwait(long dirfd, pid_t tid);
int lmb_never_user(long dirfd, pid_t pid, pid_t tid);
int lmb_read_status(long dirfd, pid_t tid, int sig, struct lmb_status *out);
int lmb_force_switch(pid_t tid);
int lmb_ran_last(pid_t tid);
void lmb_ran_set(pid_t tid, int ran);
void lmb_blockers_reset(void);
void lmb_blockers_prepare(void);
extern int64_t lmb_force_hold_ns;

/* sig-list.c */
extern struct lmb_own lmb_owns[LMB_SLOTS];
int lmb_proc_lists_self(void);
int lmb_proc_is_ours(void);
long lmb_task_fd(struct lmb_own *own);
long lmb_list_threads(struct lmb_own *own, long fd, pid_t self, char **list);
pid_t lmb_entry_tid(const struct lmb_dirent64 *d);

/* sig-choose.c */
int lmb_send_signal(pid_t pid, pid_t tid, int sig);
int lmb_ours(int sig);
int lmb_install(int requested, int avoid);
int lmb_publish(int old, int sig);
void lmb_mark_unsendable(int sig);

#endif
