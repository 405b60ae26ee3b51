/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A barrier of the signal mechanism (see sig.h): list the threads, decide
 * what each needs, signal those that must run the handler, and wait until
 * every one is done.  The top of the mechanism: calls the other sig-*.c
 * files, die.c and sys.c.
 */
#include "sig.h"

#include <errno.h>
#include <unistd.h>
#include <linux/futex.h>

/* How long lmb_wait() polls before it sleeps: a running target on another
 * CPU runs the handler in a few microseconds (about 8 on a 2-CPU VM). */
#define LMB_POLL_NS 20000

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

enum { LMB_DONE, LMB_SIGNAL, LMB_CANNOT, LMB_UNREAD };

/*
 * What a listed thread needs, read after the caller's fence.  strict: it
 * must run the handler (SYNC_CORE where the scheduler does not serialise).
 * A running thread is signalled at once; whether it is one that never runs
 * user code (A) is asked only if its handler does not come (lmb_round).
 * LMB_UNREAD: one that ran at the last barrier is left to its status read
 * (lmb_should_send(), sig-thread.c's lmb_ran).
 */
static int lmb_classify(long dirfd, pid_t pid, pid_t tid, int strict)
{
	if (!strict && lmb_ran_last(tid))
		return LMB_UNREAD;
	if (!strict)
		return lmb_off_cpu(dirfd, tid) ? LMB_DONE : LMB_SIGNAL;	/* (B) */
	if (lmb_in_sigwait(dirfd, tid))
		return LMB_CANNOT;	/* it would take the signal as its own */
	return lmb_never_user(dirfd, pid, tid) ? LMB_DONE : LMB_SIGNAL;
}

/*
 * Should t be sent the signal?  Not if its status shows the signal
 * blocked, nor ours already pending (it would queue a second): a queued
 * real-time signal stays pending while blocked, survives execve(), and
 * kills the next program when it unblocks it (the disposition is reset to
 * the default).  (B), (C) and (D) serve a thread that blocks it; lmb_round()
 * sends it the signal once its status shows it unblocked.  Strict or not:
 * a strict barrier waits for that too.  A status that cannot be read is
 * unknown: the thread is sent the signal.  The read is after the caller's
 * fence: a fine base for the context-switch count.  An unread thread
 * (LMB_UNREAD) that its status shows not running is classified here by
 * (B), as any other; if it is to be signalled after all, its status is
 * read again, just before the signal, as for the others (the window
 * membarrier(3) describes stays that short).
 */
static int lmb_should_send(long dirfd, struct lmb_target *t, int sig)
{
	struct lmb_status s;

	if (lmb_read_status(dirfd, t->tid, sig, &s) != 0)
		return 1;
	if (t->unread && s.found && !s.running) {
		t->unread = 0;
		lmb_ran_set(t->tid, 0);
		if (lmb_off_cpu(dirfd, t->tid)) {
			t->done = 1;	/* (B) */
			return 0;
		}
		if (lmb_read_status(dirfd, t->tid, sig, &s) != 0)
			return 1;
	}
	if (!s.found)
		return 1;
	lmb_ran_set(t->tid, s.running);
	t->have_base = 1;
	t->base = s.switches;
	return !s.pending && !s.blocked;
}

/* Queue the signal to t, with the call setup probed; 0, or -errno. */
static int lmb_send(struct lmb_target *t, int sig, pid_t pid, int64_t start, long dirfd)
{
	int ret;

	t->sent = 1;
	while ((ret = lmb_send_signal(pid, t->tid, sig)) == -EAGAIN) {
		/* The real-time signal queue is full. */
		if (lmb_now_ns() - start > LMB_BLOCKED_LIMIT_NS)
			lmb_die("membarrier_heavy: cannot queue signal %ld to thread %ld: "
				"the real-time signal queue stayed full for 10 s", sig, t->tid);
		lmb_pause(64);
	}
	if (ret == -ESRCH) {
		t->done = 1;	/* exited: needs nothing */
	} else if (ret == -EINVAL) {
		return LMB_UNSENDABLE;	/* a valid signal: it cannot be sent here */
	} else if (ret < 0 && lmb_never_user(dirfd, pid, t->tid)) {
		t->done = 1;	/* never runs user code */
	} else if (ret < 0) {
		return ret;
	}
	return 0;
}

/* Signal the batch in the slot and wait until each target is done.
 * Returns 0 or -errno. */
static int lmb_round(struct lmb_slot *slot, struct lmb_target *t, int count,
		     int sig, pid_t pid, long dirfd, int sync_core, int strict)
{
	unsigned int gen = __atomic_load_n(&slot->gen, __ATOMIC_RELAXED) + 1;
	int64_t start = lmb_now_ns();

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

		if (!lmb_should_send(dirfd, &t[i], sig))
			continue;
		ret = lmb_send(&t[i], sig, pid, start, dirfd);
		if (ret < 0)
			return ret;
	}

	for (unsigned int round = 0, check = 0;; round++) {
		unsigned int seq = __atomic_load_n(&slot->seq, __ATOMIC_ACQUIRE);
		int pending = 0;

		for (int i = 0; i < count; i++) {
			struct lmb_status s;
			int64_t now;
			int known;

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
			/* SYNC_CORE may fail (membarrier(3)): it does, after 10 s. */
			if (sync_core && lmb_now_ns() - start > LMB_BLOCKED_LIMIT_NS)
				return -EAGAIN;
			if (round < 64)
				continue;
			/* Unknown where it cannot be read (no descriptor free). */
			known = lmb_read_status(dirfd, t[i].tid, sig, &s) == 0 && s.found;
			if (known && !t[i].have_base) {
				t[i].have_base = 1;
				t[i].base = s.switches;
			} else if (known && !strict && s.switches != t[i].base) {
				t[i].done = 1;	/* (C): through __schedule() */
				pending--;
				continue;
			}
			/* Not sent (it blocked the signal), and now unblocked
			 * with none of ours pending, or unknown: send it now. */
			if (!t[i].sent && (!known || (!s.blocked && !s.pending))) {
				int ret = lmb_send(&t[i], sig, pid, start, dirfd);

				if (ret < 0)
					return ret;
				continue;
			}
			if (strict || (known && !s.blocked))
				continue;
			/* (D): no handler comes; move it between CPUs. */
			now = lmb_now_ns();
			if (now - start > LMB_FORCE_NS && now - t[i].forced > LMB_FORCE_NS) {
				t[i].forced = now;
				t[i].forced_err = lmb_force_switch(t[i].tid);
				if (t[i].forced_err == 0) {
					t[i].done = 1;
					pending--;
					continue;
				}
			}
			if (now - start > LMB_BLOCKED_LIMIT_NS)
				lmb_die(known ?
					"membarrier_heavy: thread %ld runs with the signal blocked, "
					"was not switched out for 10 s, and cannot be moved between "
					"CPUs (errno %ld)" :
					"membarrier_heavy: thread %ld has not run the handler for 10 s, "
					"its state cannot be read, and it cannot be moved between "
					"CPUs (errno %ld)", t[i].tid, -t[i].forced_err);
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
	if ((fd == -EMFILE || fd == -ENFILE) && lmb_reserve_take(2)) {
		fd = lmb_task_fd(own);	/* into the descriptor freed */
		lmb_reserve_give();
	}
	if ((fd == -EMFILE || fd == -ENFILE) && index != 0) {
		/* None left for this slot: wait for the first, which has
		 * one (it took it from the reserve, if need be). */
		lmb_slot_put(slot);
		slot = lmb_slot_wait(0, LMB_BLOCKED_LIMIT_NS);
		index = 0;
		own = &lmb_owns[0];
		t = own->t;
		fd = lmb_task_fd(own);
	}
	if (fd < 0) {
		ret = (int)fd;
		goto out;
	}

	n = lmb_list_threads(own, fd, self, &list);
	if (n < 0) {
		ret = (int)n;
		goto out;
	}

	for (long off = 0; off < n && ret == 0;) {
		struct lmb_dirent64 *d = (struct lmb_dirent64 *)(list + off);
		pid_t tid = lmb_entry_tid(d);
		int what;

		off += d->d_reclen;
		if (tid <= 0 || tid == self)
			continue;
		switch ((what = lmb_classify(fd, pid, tid, strict))) {
		case LMB_DONE:
			continue;
		case LMB_CANNOT:
			ret = -EAGAIN;
			goto out;
		}
		t[count].unread = what == LMB_UNREAD;
		t[count].tid = tid;
		t[count].done = 0;
		t[count].sent = 0;
		t[count].have_base = 0;
		t[count].forced = 0;
		t[count].forced_err = 0;
		if (++count == LMB_BATCH) {
			ret = lmb_round(slot, t, count, sig, pid, fd, sync_core, strict);
			count = 0;
		}
	}
	if (count > 0 && ret == 0)
		ret = lmb_round(slot, t, count, sig, pid, fd, sync_core, strict);

out:
	lmb_slot_put(slot);
	return ret;
}

/*
 * One barrier, moving to another free signal when the application took
 * ours or it cannot be sent here (no target got it).  Returns 0, or -errno
 * where no correct barrier is left, with *why and *n1 for lmb_die().
 */
static int lmb_signal_try(int sync_core, const char **why, long *n1)
{
	for (;;) {
		int sig = lmb_signal_current(), ret, next;

		if (sig <= 0)
			sig = lmb_signal_setup(0);
		if (sig <= 0) {
			*why = "membarrier_heavy: the signal mechanism cannot work here (no "
			       "/proc/self/task listing this thread, or no free real-time signal)";
			return -EAGAIN;
		}
		if (sync_core)
			lmb_serialise();
		ret = lmb_signal_barrier(sig, sync_core);
		if (ret == 0)
			return 0;
		*n1 = ret == -ESRCH ? lmb_gettid() : ret == -EAGAIN ? sig : -ret;
		if (ret == -EAGAIN) {
			*why = "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE): a thread "
			       "waits in sigtimedwait() or did not run the handler of signal %ld "
			       "for 10 s";
			return ret;
		}
		if (ret == -ESRCH) {
			*why = "membarrier_heavy: this thread (%ld) is not in /proc/self/task "
			       "(a /proc of another PID namespace?)";
			return ret;
		}
		if (ret != -EBUSY && ret != LMB_UNSENDABLE) {
			*why = "membarrier_heavy: cannot list the threads in /proc/self/task "
			       "or signal them (errno %ld)";
			return ret;
		}
		if (ret == LMB_UNSENDABLE)
			lmb_mark_unsendable(sig);
		next = lmb_install(0, sig);
		if (next < 0) {
			*n1 = sig;
			*why = ret == -EBUSY ?
				"membarrier_heavy: the application took signal %ld and no "
				"other real-time signal is free" :
				"membarrier_heavy: signal %ld cannot be sent here and no other "
				"real-time signal that can is free";
			return -EAGAIN;
		}
		(void)lmb_publish(sig, next);
	}
}

/*
 * The barrier.  Where no correct barrier is left, membarrier_heavy()
 * (sync_core 0), which cannot fail, aborts with a message; the emulated
 * PRIVATE_EXPEDITED_SYNC_CORE (sync_core 1) fails with -EAGAIN instead
 * (membarrier(3)), as when a thread waits in sigtimedwait() (it would take
 * our signal as its own: glibc's helper thread of timer_create() does).
 */
int lmb_signal_heavy(int sync_core)
{
	/* fstat(), sigaction(), mmap() may set errno on the way. */
	int saved = errno, ret;
	const char *why = NULL;
	long n1 = 0;

	ret = lmb_signal_try(sync_core, &why, &n1);
	if (ret != 0 && !sync_core)
		lmb_die(why, n1, 0);
	errno = saved;
	return ret == 0 ? 0 : -EAGAIN;
}
