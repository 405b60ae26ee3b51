/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A caller that finds a shared heavy barrier in flight never waits on its
 * runner for much longer than a call of its own would take
 * (libmembarrier/coalesce.c), whatever keeps the runner from running:
 *   idle     all on one CPU: a SCHED_IDLE thread loops membarrier_heavy(),
 *            a normal thread spins, a normal thread times its calls (the
 *            low-priority reclaim thread beside a latency-critical one);
 *   stopped  the runner is stopped alone for 2 s, as gdb's non-stop mode
 *            stops one thread (ptrace PTRACE_INTERRUPT from a child), at
 *            a moment when it holds the call; two threads time theirs;
 *   fifo     the runner, caught the same way, is let go while a SCHED_FIFO
 *            thread spins on its CPU: runnable, but starved (with real-time
 *            throttling off it would be for good); a thread on the other
 *            CPU times its calls;
 *   sigstop  the runner is a process sharing our memory (clone(CLONE_VM)),
 *            stopped with SIGSTOP for 2 s while it holds the call; two
 *            threads time theirs.
 * Each scene runs three ways in one process: each call its own (sharing
 * off), shared, and the control: shared, with waits that end only when the
 * runner ends its call, as in 1.5.  The timed threads' worst call when
 * shared must be at most twice their worst call of their own (up to three
 * pairs of phases: a worst call is the tail of a noisy host's
 * distribution), and the control's must be more than that (up to three
 * phases), or the scene proved nothing.  fifo catches the runner in user
 * space: one preempted inside the kernel's membarrier() holding its mutex
 * holds up a call of one's own just as long (the kernel's inversion, on a
 * preemptible kernel), which no library can shorten.  The figures are
 * printed, and make bench reports them (section 6).  With the signal
 * mechanism only stopped runs: its own call waits for a preempted or
 * starved thread's handler too, so there is nothing for sharing to add,
 * and a process sharing our memory runs none of its calls for us.
 * stopped and fifo need two CPUs, fifo also the right to use SCHED_FIFO
 * (root): without them they are skipped, saying why.  Under an emulator
 * the test is skipped: qemu-user has no ptrace, and the scheduler measured
 * is the host's, the same for every architecture; the native builds run
 * it.  Under a sanitizer too: it is timing, and its paths run there in
 * tests/litmus.sh (--impatient) and tests/children.  The mechanism is the one chosen here; --child re-runs with the
 * signal mechanism.  About 20 s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"
#include "testing.h"

enum mode { OFF, SHARED, CONTROL };
/*
 * A worst call is the tail of a noisy distribution (this host's other
 * work, its hypervisor): up to ATTEMPTS pairs of phases, own then shared,
 * until one pair meets the bound.  A waiter that waits on its runner fails
 * every pair by far: the control shows by how much.  The control, too,
 * may catch nothing in one phase (idle: the SCHED_IDLE runner may finish
 * its calls between the others' turns): up to ATTEMPTS phases.
 */
#define ATTEMPTS 3
#define PHASE_NS 1000000000
static const char *const mode_name[] = { "own calls", "shared", "control (unbounded waits)" };

static int stop, failures;
static int cpu_a = -1, cpu_b = -1;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		tap_bail("pthread_setaffinity_np(CPU %d)", cpu);
}

static void heavy(void)
{
	if (membarrier_heavy() != 0)
		__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
}

/* A thread's part in a scene. */
struct actor {
	pthread_t t;
	int cpu;		/* -1: anywhere */
	int policy;		/* SCHED_OTHER, SCHED_IDLE, SCHED_FIFO */
	void *(*fn)(struct actor *);
	int64_t worst, calls, sum;	/* a timer's figures */
	int64_t until;		/* a timer's end */
	pid_t tid;
};

static void *actor_main(void *arg)
{
	struct actor *a = arg;
	struct sched_param sp = { 0 };

	a->tid = (pid_t)syscall(SYS_gettid);
	if (a->cpu >= 0)
		pin(a->cpu);
	if (a->policy == SCHED_FIFO)
		sp.sched_priority = 1;
	if (a->policy != SCHED_OTHER && pthread_setschedparam(pthread_self(), a->policy, &sp) != 0)
		tap_bail("pthread_setschedparam(%d)", a->policy);
	return a->fn(a);
}

static void *looper(struct actor *a)
{
	(void)a;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		heavy();
	return NULL;
}

static void *spinner(struct actor *a)
{
	(void)a;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

/* Times its calls until a->until, then stops the scene. */
static void *timer(struct actor *a)
{
	int64_t t0 = now_ns(), t1;

	while ((t1 = now_ns()) < a->until) {
		heavy();
		t0 = now_ns();
		if (t0 - t1 > a->worst)
			a->worst = t0 - t1;
		a->sum += t0 - t1;
		a->calls++;
	}
	(void)t0;
	return NULL;
}

/* The SCHED_FIFO thread: spins until a->until. */
static void *hog(struct actor *a)
{
	while (now_ns() < a->until)
		;
	return NULL;
}

static void start(struct actor *a, int n)
{
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		if (pthread_create(&a[i].t, NULL, actor_main, &a[i]) != 0)
			tap_bail("pthread_create");
}

static void join(struct actor *a, int n)
{
	for (int i = 0; i < n; i++)
		pthread_join(a[i].t, NULL);
}

/* A phase's figures, for the reader and for make bench (bench/run.sh). */
static const char *mech_name;
static const char *const mode_label[] = { "own", "shared", "control" };

static void result(const char *scene, enum mode m, int64_t worst, int64_t sum, int64_t calls)
{
	tap_diag("%s, %s: worst call %.3f ms, mean %.3f ms, of %lld", scene, mode_name[m],
		 worst / 1e6, sum / 1e6 / (calls ? calls : 1), (long long)calls);
	tap_diag("RESULT label=inversion-%s-%s-%s worst_ms=%.3f mean_ms=%.4f calls=%lld cut=%u",
		 mech_name, scene, mode_label[m], worst / 1e6, sum / 1e6 / (calls ? calls : 1),
		 (long long)calls, lmb_test_cut());
}

static void set_mode(enum mode m)
{
	lmb_test_coalesce(m != OFF);
	lmb_test_patient(m == CONTROL);
}

/* --- idle ------------------------------------------------------------- */

static int64_t scene_idle(enum mode m)
{
	struct actor a[3] = {
		{ .cpu = cpu_a, .policy = SCHED_IDLE, .fn = looper },
		{ .cpu = cpu_a, .policy = SCHED_OTHER, .fn = spinner },
		{ .cpu = cpu_a, .policy = SCHED_OTHER, .fn = timer },
	};

	set_mode(m);
	a[2].until = now_ns() + PHASE_NS;
	start(a, 3);
	pthread_join(a[2].t, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	join(a, 2);
	result("idle", m, a[2].worst, a[2].sum, a[2].calls);
	return a[2].worst;
}

/* --- stopped ---------------------------------------------------------- */

/*
 * The tracer, a child: seizes tid and stops it (PTRACE_INTERRUPT), asks
 * the parent (one byte on req) whether it holds the shared call (one byte
 * back on ans: 1 yes), resumes and tries again until it does (or, asked
 * for no hold, at once), keeps it stopped hold_ms, detaches, and says so
 * (a byte on req).  Exits 0, or 1 where ptrace failed.
 */
static void tracer(pid_t tid, int req, int ans, long hold_ms)
{
	int status;
	char c = 0;

	if (ptrace(PTRACE_SEIZE, tid, 0, 0) != 0) {
		printf("# ptrace(PTRACE_SEIZE, %d): %s\n", tid, strerror(errno));
		_exit(1);
	}
	for (int tries = 0;; tries++) {
		if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 ||
		    waitpid(tid, &status, __WALL) != tid) {
			printf("# ptrace(PTRACE_INTERRUPT, %d): %s\n", tid, strerror(errno));
			_exit(1);
		}
		if (write(req, "?", 1) != 1 || read(ans, &c, 1) != 1)
			_exit(1);
		if (c == 1 || tries == 10000)
			break;
		/* Not the runner now: let it go on, for a moment. */
		if (ptrace(PTRACE_CONT, tid, 0, 0) != 0)
			_exit(1);
		usleep(200);
	}
	sleep_ms(hold_ms);
	if (ptrace(PTRACE_DETACH, tid, 0, 0) != 0)
		_exit(1);
	_exit(write(req, c == 1 ? "h" : "n", 1) == 1 ? 0 : 1);
}

/*
 * How long a caught runner stays stopped: 2 s in the shared phase, as long
 * as the timers run (1 s) and a little more with calls of one's own, where
 * it holds nothing, and for the control, which only has to show that it
 * waits for as long, 0.25 s beyond twice the worst call of one's own (0.5
 * s at least, 5 s at most): on a loaded machine a call of one's own took
 * 0.4 s once (a parallel make check beside a kernel build), and a fixed
 * 0.5 s hold could not show the control beyond twice that.
 */
static long control_hold_ms = 500;

static long hold_ms(enum mode m)
{
	return m == SHARED ? 2000 : m == OFF ? 1100 : control_hold_ms;
}

static void set_control_hold(int64_t own_ns)
{
	int64_t ms = 2 * own_ns / 1000000 + 250;

	control_hold_ms = ms < 500 ? 500 : ms > 5000 ? 5000 : (long)ms;
}

/*
 * stopped and fifo: the looper, on CPU a, is stopped by the tracer at a
 * moment when it holds the shared call (any moment, for own calls, when
 * it holds none).  stopped: two threads on CPU b time their calls for
 * 1 s while it stays stopped (2 s).  fifo: a SCHED_FIFO thread starts
 * spinning on CPU a, the tracer lets the looper go after 30 ms, runnable
 * but starved (in user space: no kernel lock held), and one thread on CPU
 * b times its calls for 1 s.
 */
static int64_t scene_caught(enum mode m, int fifo, int *held)
{
	struct actor a[4] = {
		{ .cpu = cpu_a, .fn = looper },
		{ .cpu = cpu_b, .fn = timer },
		{ .cpu = cpu_b, .fn = timer },
		{ .cpu = cpu_a, .policy = SCHED_FIFO, .fn = hog },
	};
	int req[2], ans[2], status, timers = fifo ? 1 : 2;
	int64_t worst = 0, sum = 0, calls = 0;
	pid_t pid;
	char c;

	set_mode(m);
	start(a, 1);
	while (__atomic_load_n(&a[0].tid, __ATOMIC_ACQUIRE) == 0)
		sleep_ms(1);
	if (pipe(req) != 0 || pipe(ans) != 0)
		tap_bail("pipe");
	pid = fork();
	if (pid < 0)
		tap_bail("fork");
	if (pid == 0)
		tracer(a[0].tid, req[1], ans[0], fifo ? 30 : hold_ms(m));
	/* Answer "does the looper hold the call?" until it is stopped. */
	for (;;) {
		if (read(req[0], &c, 1) != 1)
			tap_bail("the tracer died");
		if (c != '?')
			break;
		c = m == OFF || lmb_test_owner() == (unsigned long)a[0].t;
		if (c == 1) {
			/* Caught: the hog first, then the timers. */
			a[1].until = a[2].until = now_ns() + PHASE_NS;
			a[3].until = a[1].until + 200000000;
			if (fifo)
				start(&a[3], 1);
			start(&a[1], timers);
		}
		if (write(ans[1], &c, 1) != 1)
			tap_bail("write");
	}
	*held = c == 'h';
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		tap_bail("the tracer failed");
	if (*held) {
		join(&a[1], timers);
		if (fifo)
			join(&a[3], 1);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(a[0].t, NULL);
	close(req[0]);
	close(req[1]);
	close(ans[0]);
	close(ans[1]);
	for (int i = 1; i <= timers; i++) {
		if (a[i].worst > worst)
			worst = a[i].worst;
		sum += a[i].sum;
		calls += a[i].calls;
	}
	result(fifo ? "fifo" : "stopped", m, worst, sum, calls);
	return worst;
}

/* --- verdicts --------------------------------------------------------- */

static void verdict(const char *mech, const char *scene, int64_t own, int64_t shared,
		    int64_t control)
{
	tap_ok(shared <= 2 * own && failures == 0,
	       "%s, %s: worst shared call %.3f ms <= 2 x worst own call %.3f ms", mech, scene,
	       shared / 1e6, own / 1e6);
	tap_ok(control > 2 * own,
	       "%s, %s: the control (waits without bound) exceeds it: %.3f ms", mech, scene,
	       control / 1e6);
}

/* May this process use SCHED_FIFO?  Tried on the main thread, undone. */
static int can_fifo(void)
{
	struct sched_param sp = { .sched_priority = 1 }, other = { 0 };

	return sched_setscheduler(0, SCHED_FIFO, &sp) == 0 &&
	       sched_setscheduler(0, SCHED_OTHER, &other) == 0;
}

/*
 * sigstop: the runner is a process that shares our memory (clone with
 * CLONE_VM, as a runtime's helper process might be), which a kernel
 * mechanism lets run shared calls for us, stopped with SIGSTOP for 2 s at
 * a moment when it holds the call (it has our main thread's pthread_self:
 * the main thread makes no call meanwhile); two threads time their calls
 * for 1 s.
 */
static char vm_stack[65536] __attribute__((aligned(16)));
static int vm_running;

static int vm_looper(void *arg)
{
	(void)arg;
	__atomic_store_n(&vm_running, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		heavy();
	return 0;
}

static int64_t scene_sigstop(enum mode m, int *held)
{
	struct actor a[2] = { { .cpu = -1, .fn = timer }, { .cpu = -1, .fn = timer } };
	int64_t worst = 0, sum = 0, calls = 0;
	int status, tries;
	pid_t pid;

	set_mode(m);
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&vm_running, 0, __ATOMIC_RELAXED);
	/* The stack grows down on every Debian architecture. */
	pid = clone(vm_looper, vm_stack + sizeof(vm_stack), CLONE_VM | SIGCHLD, NULL);
	if (pid < 0)
		tap_bail("clone(CLONE_VM): %s", strerror(errno));
	while (!__atomic_load_n(&vm_running, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	for (tries = 0; tries < 10000; tries++) {
		if (kill(pid, SIGSTOP) != 0 || waitpid(pid, &status, WUNTRACED) != pid)
			tap_bail("SIGSTOP");
		if (m == OFF || lmb_test_owner() == (unsigned long)pthread_self())
			break;
		kill(pid, SIGCONT);
		usleep(200);
	}
	*held = tries < 10000;
	if (*held) {
		a[0].until = a[1].until = now_ns() + PHASE_NS;
		start(a, 2);
		sleep_ms(hold_ms(m));
	}
	kill(pid, SIGCONT);
	if (*held)
		join(a, 2);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		tap_bail("the looping process did not end");
	for (int i = 0; i < 2; i++) {
		if (a[i].worst > worst)
			worst = a[i].worst;
		sum += a[i].sum;
		calls += a[i].calls;
	}
	result("sigstop", m, worst, sum, calls);
	return worst;
}

/* fifo: 0 stopped, 1 fifo, 2 sigstop. */
static int64_t phase(enum mode m, int fifo, int *held)
{
	return fifo == 2 ? scene_sigstop(m, held) : scene_caught(m, fifo, held);
}

static void scene(const char *mech, const char *name, int fifo)
{
	int64_t own, shared, control;
	int held = 0;

	for (int attempt = 1;; attempt++) {
		own = phase(OFF, fifo, &held);
		shared = phase(SHARED, fifo, &held);
		if (shared <= 2 * own || attempt == ATTEMPTS)
			break;
	}
	CHECK(held, "%s: the runner was never caught holding a shared call\n", name);
	set_control_hold(own);
	if (fifo != 1)	/* fifo: the hog starves it for 1.2 s */
		tap_diag("%s, %s: the control holds the runner %ld ms", mech, name,
			 control_hold_ms);
	for (int attempt = 1;; attempt++) {
		control = phase(CONTROL, fifo, &held);
		if (control > 2 * own || attempt == ATTEMPTS)
			break;
	}
	CHECK(held, "%s, control: the runner was never caught holding a call\n", name);
	verdict(mech, name, own, shared, control);
}

/*
 * With the signal mechanism only stopped runs: its own call waits for a
 * preempted or starved thread's handler too (every running thread runs
 * it), so idle and fifo have nothing for sharing to add; and a process
 * sharing our memory runs no shared call of the signal mechanism for us
 * (coalesce.c), so sigstop has no runner to stop.
 */
static int scenes(const char *mech)
{
	return strcmp(mech, "signal") == 0 ? 2 : 8;
}

static void run(const char *mech)
{
	if (scenes(mech) == 8) {
		int64_t own, shared, control;

		for (int attempt = 1;; attempt++) {
			own = scene_idle(OFF);
			shared = scene_idle(SHARED);
			if (shared <= 2 * own || attempt == ATTEMPTS)
				break;
		}
		for (int attempt = 1;; attempt++) {
			control = scene_idle(CONTROL);
			if (control > 2 * own || attempt == ATTEMPTS)
				break;
		}
		verdict(mech, "idle", own, shared, control);
	}
	if (cpu_b < 0) {
		printf("ok - %s, stopped # SKIP one CPU: the runner and the others need two\n",
		       mech);
		printf("ok - %s, stopped control # SKIP one CPU\n", mech);
	} else {
		scene(mech, "stopped", 0);
	}
	if (scenes(mech) == 8) {
		const char *why =
			cpu_b < 0 ? "one CPU: the runner and the others need two" :
			!can_fifo() ? "SCHED_FIFO refused (not root, no CAP_SYS_NICE)" : NULL;

		if (why == NULL) {
			scene(mech, "fifo", 1);
		} else {
			printf("ok - %s, fifo # SKIP %s\n", mech, why);
			printf("ok - %s, fifo control # SKIP %s\n", mech, why);
		}
		scene(mech, "sigstop", 2);
	}
	tap_diag("%s: %u waits cut short by a call of the waiter's own", mech, lmb_test_cut());
}

int main(int argc, char **argv)
{
	int child = argc == 2 && strcmp(argv[1], "--child") == 0;
	struct membarrier_strategy st;
	cpu_set_t set;

	if (test_emulator() != NULL) {
		printf("1..0 # SKIP under TEST_EMULATOR: no ptrace in qemu-user, and the scheduler "
		       "measured is the host's (the native builds run it)\n");
		return 0;
	}
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* 25 s of timing, whose paths (waits cut short, own calls) the
	 * sanitizer build runs in tests/litmus.sh --impatient and tests/children. */
	printf("1..0 # SKIP under a sanitizer: a timing test (the default build runs it; its "
	       "paths run here in tests/litmus.sh and tests/children)\n");
	return 0;
#endif
	alarm(120);	/* a waiter that waits for good: a failure */
	if (membarrier_get_strategy(&st, sizeof(st)) != 0)
		tap_bail("membarrier_get_strategy");
	/* The tracer is our child: Yama's ptrace_scope 1 allows it so. */
	(void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		tap_bail("sched_getaffinity");
	for (int cpu = 0; cpu < CPU_SETSIZE && cpu_b < 0; cpu++)
		if (CPU_ISSET(cpu, &set)) {
			if (cpu_a < 0)
				cpu_a = cpu;
			else
				cpu_b = cpu;
		}
	mech_name = membarrier_mechanism_name(st.heavy);
	if (!child)
		tap_plan(scenes(mech_name) + scenes("signal"));
	run(mech_name);
	if (child)
		return tap_failed != 0;
	test_reexec_signal(argv[0]);
	tap_bail("cannot re-execute %s", argv[0]);
}
