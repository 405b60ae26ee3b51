/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What /proc/self/task/TID tells of one thread of the process: whether it
 * is off its CPU (B), will never run user code again (A), waits in
 * sigtimedwait(), and its context switches and signal masks (C, D); and
 * moving it between CPUs when nothing else can order it (D).  Calls sys.c
 * and sig-fd.c (a reserved descriptor when none is free).
 */
#include "sig.h"

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <string.h>

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

/* Does /proc/self/task/TID/wchan read a sleeper's state under its locks
 * (5.16 and later, see lmb_off_cpu())? */
static int lmb_wchan_locked;

/* Once, at setup: what applies to the running kernel. */
void lmb_thread_setup(void)
{
	if (lmb_kernel_at_least(5, 12))
		__atomic_store_n(&lmb_pf_never_user, LMB_PF_KTHREAD | LMB_PF_IO_WORKER,
				 __ATOMIC_RELAXED);
	__atomic_store_n(&lmb_wchan_locked, lmb_kernel_at_least(5, 16), __ATOMIC_RELAXED);
	lmb_reserve_setup();
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

/*
 * Open /proc/self/task/TID/LEAF (dirfd: /proc/self/task): the descriptor
 * or -errno.  With none free, one of the reserve is freed for it
 * (*borrowed), for lmb_close_leaf() to take back.
 */
static long lmb_open_leaf(long dirfd, pid_t tid, const char *leaf, int *borrowed)
{
	char name[32];
	long fd;

	lmb_leaf_name(name, tid, leaf);
	*borrowed = 0;
	fd = lmb_syscall(SYS_openat, dirfd, (long)name, O_RDONLY | O_CLOEXEC, 0);
	if ((fd == -EMFILE || fd == -ENFILE) && lmb_reserve_take(1)) {
		*borrowed = 1;
		fd = lmb_syscall(SYS_openat, dirfd, (long)name, O_RDONLY | O_CLOEXEC, 0);
	}
	return fd;
}

static void lmb_close_leaf(long fd, int borrowed)
{
	if (fd >= 0)
		(void)lmb_syscall(SYS_close, fd, 0, 0, 0);
	if (borrowed)
		lmb_reserve_give();
}

/* Read /proc/self/task/TID/LEAF (dirfd: /proc/self/task) into buf, NUL
 * terminated; returns the length or -errno. */
long lmb_read_leaf(long dirfd, pid_t tid, const char *leaf, char *buf, size_t size)
{
	int borrowed;
	long fd = lmb_open_leaf(dirfd, tid, leaf, &borrowed), n;

	if (fd < 0) {
		lmb_close_leaf(fd, borrowed);
		return fd;
	}
	n = lmb_syscall(SYS_read, fd, (long)buf, (long)size - 1, 0);
	lmb_close_leaf(fd, borrowed);
	if (n < 0)
		return n;
	buf[n] = '\0';
	return n;
}

/* (B): asleep or stopped, and off its CPU; see the comment at the top. */
int lmb_off_cpu(long dirfd, pid_t tid)
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
	 * 0444, and since 5.16 the kernel names a wait channel only for a
	 * thread that is asleep and off its runqueue, read under the thread's
	 * pi_lock, which its wake-up takes too (get_wchan(), "sched: Fix
	 * get_wchan()"); "0" otherwise, or where it cannot name it: then the
	 * thread is signalled.  Before 5.16 get_wchan() took no lock and
	 * could name the wait of a thread that had just left it without
	 * passing through the scheduler: nothing would order its next access
	 * after our fence.  There every such thread is signalled.
	 */
	if (!__atomic_load_n(&lmb_wchan_locked, __ATOMIC_RELAXED))
		return 0;
	n = lmb_read_leaf(dirfd, tid, "wchan", buf, sizeof(buf));
	return n > 0 && !(buf[0] == '0' && buf[1] == '\0');
}


/* Is the thread asleep in sigtimedwait() (it would consume the signal
 * if it waits for it, and never run the handler)? */
int lmb_in_sigwait(long dirfd, pid_t tid)
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
int lmb_never_user(long dirfd, pid_t pid, pid_t tid)
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

/* lmb_read_lines(): one line of a thread's status into the lmb_status. */
struct lmb_status_read {
	struct lmb_status *out;
	int sig, n_found;
};

static int lmb_status_line(char *line, void *arg)
{
	struct lmb_status_read *r = arg;

	if (strncmp(line, "State:\t", 7) == 0) {
		r->out->running = line[7] == 'R';
	} else if (strncmp(line, "SigBlk:\t", 8) == 0) {
		r->out->blocked = lmb_mask_has(line + 8, r->sig);
		r->n_found++;
	} else if (strncmp(line, "SigPnd:\t", 8) == 0) {
		r->out->pending = lmb_mask_has(line + 8, r->sig);
		r->n_found++;
	} else if (strncmp(line, "voluntary_ctxt_switches:\t", 25) == 0 ||
		   strncmp(line, "nonvoluntary_ctxt_switches:\t", 28) == 0) {
		const char *q = strchr(line, '\t') + 1;
		unsigned long v = 0;

		while (*q >= '0' && *q <= '9')
			v = v * 10 + (unsigned long)(*q++ - '0');
		r->out->switches += v;
		r->n_found++;
	}
	return r->n_found == 4;	/* the last two lines: stop here */
}

/* From /proc/self/task/TID/status: the context switches, whether sig is
 * blocked or pending, and whether the thread is running (State).  Read
 * line by line: a line too long for the buffer (CPU and node masks of
 * large machines) is skipped.  The file is about 1.4 KB: a buffer that
 * takes it in one read() takes a quarter off the cost of reading it (15
 * us instead of 19 on a 2-CPU VM), which a barrier pays for every running
 * thread before it sends the signal. */
int lmb_read_status(long dirfd, pid_t tid, int sig, struct lmb_status *out)
{
	char buf[2048];
	struct lmb_status_read r = { out, sig, 0 };
	int borrowed;
	long fd = lmb_open_leaf(dirfd, tid, "status", &borrowed);

	if (fd < 0) {
		lmb_close_leaf(fd, borrowed);
		return (int)fd;
	}
	memset(out, 0, sizeof(*out));
	(void)lmb_read_lines(fd, buf, sizeof(buf), lmb_status_line, &r);
	lmb_close_leaf(fd, borrowed);
	out->found = r.n_found == 4;
	return 0;
}

/*
 * (D) Proving a thread ordered without its handler: move it, for a moment,
 * to one CPU a, then to another, b, then give it back the set
 * sched_getaffinity() gave.  sched_setaffinity() works under the thread's
 * pi_lock and runqueue lock, and a thread on its CPU (running, or on its
 * way to sleep: on_cpu) that may not stay there is migrated by that CPU's
 * stopper, which switches it out through __schedule(), and the call
 * returns only once it has moved.  After the first move the thread can
 * only be on a (or asleep); the second excludes a: so during the second
 * call the thread was either switched out by the stopper or off its CPU
 * under its runqueue lock, which is (B)'s argument, and does not depend
 * on reading its state (wchan before 5.16, a status file with no
 * descriptor free).  One move at a time (lmb_force_busy), so that two
 * barriers cannot take each other's temporary set for the application's;
 * static sets (up to 8192 CPUs), as the stack may be a small alternate one.
 *
 * The mover blocks every signal while it holds lmb_force_busy: a handler
 * that made a barrier of its own there would find the lock taken by the
 * barrier it interrupted, which cannot go on until the handler returns,
 * and a thread that needed moving would hold that barrier up until it
 * aborted.  The moved thread may fork() while it is on one CPU: its child
 * would keep that CPU alone, so the fork handlers compare the forking
 * thread (lmb_fork_tid, from the prepare handler) with the one moved
 * (lmb_force_tid), and the child of the moved thread takes back the set
 * the application gave it.  (glibc holds its fork-handler lock from the
 * prepare handlers to the child's, so the two forks cannot mix.)
 */
#define LMB_SET_LONGS (1024 / sizeof(unsigned long))
#define LMB_LONG_BITS (8 * sizeof(unsigned long))
static int lmb_force_busy;
static pid_t lmb_force_tid, lmb_fork_tid;
static long lmb_force_len;
static unsigned long lmb_app_set[LMB_SET_LONGS], lmb_one_set[LMB_SET_LONGS];
/* The tests' widening of the moment on one CPU (testing.c), in ns. */
int64_t lmb_force_hold_ns;

/* Move tid to CPU cpu alone: 0 or -errno. */
static long lmb_move_to(pid_t tid, long len, long cpu)
{
	memset(lmb_one_set, 0, (size_t)len);
	lmb_one_set[cpu / LMB_LONG_BITS] = 1UL << (cpu % LMB_LONG_BITS);
	return lmb_syscall(SYS_sched_setaffinity, tid, len, (long)lmb_one_set, 0);
}

static int lmb_in_set(const unsigned long *set, long cpu)
{
	return (set[cpu / LMB_LONG_BITS] >> (cpu % LMB_LONG_BITS)) & 1;
}

/*
 * Make thread tid pass through the scheduler, or prove it off its CPU, as
 * above: 0 when done, or -errno: -EBUSY (another barrier is moving a
 * thread), -EINVAL (no second CPU it may use: one CPU online, a cpuset of
 * one), -EPERM (other credentials)...
 */
int lmb_force_switch(pid_t tid)
{
	long len, ret, a = -1, b = -1, bits;
	/* The kernel's signal set (8 bytes; 16 on mips), not glibc's 128. */
	unsigned char all[(_NSIG - 1) / 8], old[(_NSIG - 1) / 8];

	memset(all, 0xff, sizeof(all));
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)all, (long)old, sizeof(all));
	if (__atomic_exchange_n(&lmb_force_busy, 1, __ATOMIC_ACQUIRE)) {
		(void)lmb_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)old, 0, sizeof(old));
		return -EBUSY;
	}
	__atomic_store_n(&lmb_force_len, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&lmb_force_tid, tid, __ATOMIC_RELAXED);
	len = lmb_syscall(SYS_sched_getaffinity, tid, sizeof(lmb_app_set), (long)lmb_app_set, 0);
	if (len <= 0 || len % (long)sizeof(unsigned long) != 0) {
		ret = len < 0 ? len : -EINVAL;
		goto out;
	}
	/* Published before the first move: a child of the moved thread reads it. */
	__atomic_store_n(&lmb_force_len, len, __ATOMIC_SEQ_CST);
	bits = len * 8;
	for (long cpu = 0; cpu < bits && b < 0; cpu++)
		if (lmb_in_set(lmb_app_set, cpu)) {
			if (a < 0)
				a = cpu;
			else
				b = cpu;
		}
	ret = a < 0 ? -EINVAL : lmb_move_to(tid, len, a);
	for (int64_t t = 0; ret == 0 && t < lmb_force_hold_ns; t += 1000000)
		lmb_pause(1024);	/* 1 ms */
	if (ret == 0 && b >= 0) {
		ret = lmb_move_to(tid, len, b);
	} else if (ret == 0) {
		/* Bound to a alone: any other CPU it may use, for a moment. */
		ret = -EINVAL;
		for (long cpu = 0, tries = 0; cpu < bits && tries < 64 && ret == -EINVAL; cpu++)
			if (cpu != a) {
				ret = lmb_move_to(tid, len, cpu);
				tries++;
			}
	}
	if (a >= 0)
		(void)lmb_syscall(SYS_sched_setaffinity, tid, len, (long)lmb_app_set, 0);
out:
	__atomic_store_n(&lmb_force_tid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&lmb_force_busy, 0, __ATOMIC_RELEASE);
	(void)lmb_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)old, 0, sizeof(old));
	return (int)ret;
}

/*
 * The threads found running by the last barriers, by thread id modulo
 * LMB_RAN: a hint, read and written without order.  A running thread is
 * read twice before it is signalled: syscall, which says "running" (so it
 * is not done by (B)), then status (SigBlk and SigPnd, sig-round.c).  Its
 * status shows the state too ("State: R", the same test that makes
 * syscall say "running"), so a thread that ran at the last barrier is
 * read once, status first, and its syscall only if its status shows it
 * not running.  A wrong hint costs a read, never a barrier: only syscall
 * (B) makes a thread done without its handler.
 */
#define LMB_RAN 256
static pid_t lmb_ran[LMB_RAN];

int lmb_ran_last(pid_t tid)
{
	return __atomic_load_n(&lmb_ran[tid % LMB_RAN], __ATOMIC_RELAXED) == tid;
}

void lmb_ran_set(pid_t tid, int ran)
{
	pid_t was = tid;

	if (ran)
		__atomic_store_n(&lmb_ran[tid % LMB_RAN], tid, __ATOMIC_RELAXED);
	else
		(void)__atomic_compare_exchange_n(&lmb_ran[tid % LMB_RAN], &was, 0, 0,
						  __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* A child of fork() has one thread: a move another thread of the parent
 * had under way does not exist in it, and the parent's hints name other
 * threads. */
void lmb_blockers_reset(void)
{
	pid_t moved = __atomic_load_n(&lmb_force_tid, __ATOMIC_RELAXED);
	long len = __atomic_load_n(&lmb_force_len, __ATOMIC_RELAXED);

	/* Forked by the thread a barrier had moved to one CPU (see above). */
	if (__atomic_load_n(&lmb_force_busy, __ATOMIC_RELAXED) && moved != 0 &&
	    moved == lmb_fork_tid && len > 0)
		(void)lmb_syscall(SYS_sched_setaffinity, 0, len, (long)lmb_app_set, 0);
	for (int i = 0; i < LMB_RAN; i++)
		__atomic_store_n(&lmb_ran[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&lmb_force_busy, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&lmb_force_tid, 0, __ATOMIC_RELAXED);
	lmb_reserve_reset();
}

/* The prepare handler: the thread that forks (see lmb_force_switch()). */
void lmb_blockers_prepare(void)
{
	lmb_fork_tid = lmb_gettid();
}
