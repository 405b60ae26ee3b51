/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The signal mechanism against threads that cannot, or need not, run its
 * handler.  Each case re-executes this test with LIBMEMBARRIER_HEAVY=signal
 * (so the library probes afresh and takes the signal mechanism) in a child
 * that arms alarm() against a hang; the parent also kills it with SIGKILL
 * after a bound.  A hang, a crash or a wrong exit status is a failure.
 *
 *   zombie     the main thread called pthread_exit() (a zombie in
 *              /proc/self/task that never runs a handler): a worker's
 *              100 heavy barriers return 0 and the process exits 0.  A
 *              thread asleep in poll() meanwhile is not interrupted
 *              (EINTR): sleeping threads are not signalled.
 *   sigwait    every thread blocks every signal and one consumes them all
 *              with sigwaitinfo(): 100 heavy barriers return, and the
 *              consumer receives SIGUSR1 only, never the library's signal.
 *   nondumpable  as sigwait, in a process that is not dumpable, whose
 *              /proc/self/task/TID/syscall it cannot read (as root, the
 *              case first becomes uid 65534): sleepers are told by wchan.
 *              Skipped on a kernel without wchan (CONFIG_KALLSYMS=n).
 *   old-kernel as nondumpable, on a kernel that says it is older than 5.16
 *              (personality UNAME26, re-executed: uname() says 2.6.x, or
 *              3.8.0 under qemu-user),
 *              where wchan may call a thread asleep that has just left its
 *              wait: a thread asleep in poll() must be signalled (EINTR)
 *              rather than trusted to wchan, and one asleep with every
 *              signal blocked must not hold heavy up (moved between CPUs,
 *              it is proven off its CPU).  (The zombie case checks that
 *              sleepers are not signalled where the state is reliable.)
 *              Skipped where uname() ignores UNAME26 or there is no wchan.
 *   io-uring   an io_uring SQPOLL thread (iou-sqp-*, a kernel-run thread
 *              that never runs user handlers) is in the process: 100 heavy
 *              barriers return.  Skipped where io_uring_setup() is refused.
 *   blocked    a thread blocks every signal, spins 300 ms, then sleeps:
 *              a heavy barrier issued while it spins returns 0, and only
 *              once that thread was switched out (its context-switch count
 *              changed), since its handler cannot run.
 *   spinning   a thread blocks every signal and spins, as SCHED_FIFO where
 *              allowed (the scheduler then leaves it alone for about a
 *              second): heavy returns 0 within 0.5 s, only after the
 *              thread was switched out (its context-switch count moved):
 *              the library moves it to another CPU for a moment when no
 *              switch comes, and restores its affinity.  (0.3.2 waited for a preemption, and aborted
 *              after 10 s where none came.)
 *   exec       a thread blocks every signal and spins while a heavy barrier
 *              lists it, then sleeps, then execve()s this program, which
 *              unblocks every signal and exits 0: the library must not
 *              have queued its signal to that thread (it would survive the
 *              exec and kill the new program on unblocking).
 *   nofile-first  a process that has used up RLIMIT_NOFILE before its first
 *              heavy barrier (a spinner and a sleeper beside it): 10 heavy
 *              barriers return 0 (membarrier(3): no call fails for lack of
 *              a descriptor), and every descriptor of the program's is
 *              still open.
 *   nofile-blocked  after a first heavy barrier, a thread blocks every
 *              signal and spins, and the process uses up RLIMIT_NOFILE:
 *              heavy returns 0 within 5 s, after that thread was switched
 *              out; the library reads its state with a descriptor it
 *              holds in reserve.
 *   churn      four threads issue 2000 heavy barriers at once while other
 *              threads spin, sleep, and come and go: all return 0.
 *   churn-one  one thread issues 3000 heavy barriers while three threads
 *              create and join threads without pause: all return 0 (the
 *              thread list grows between any two reads of it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"

/* A child that skips exits with this status after printing "SKIP: why". */
#define SKIP_STATUS 77

static int failures;


static volatile int stop;
static struct membarrier_strategy strategy;

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Every child starts here: the library must have chosen the signal mechanism. */
static void child_start(unsigned int seconds)
{
	alarm(seconds);	/* a hang is a failure (SIGALRM kills the child) */
	setvbuf(stdout, NULL, _IOLBF, 0);	/* a pipe: keep lines a hang would lose */
	if (membarrier_get_strategy(&strategy, sizeof(strategy)) != 0 ||
	    strategy.heavy != MEMBARRIER_MECHANISM_SIGNAL) {
		printf("# FAILED: heavy mechanism is %s, not signal\n",
		       membarrier_mechanism_name(strategy.heavy));
		exit(EXIT_FAILURE);
	}
	printf("# signal mechanism, signal %d\n", strategy.signal);
	fflush(stdout);
}

static int heavy_n(int n)
{
	int errors = 0;

	for (int i = 0; i < n; i++)
		if (membarrier_heavy() != 0)
			errors++;
	return errors;
}

/* Context switches of thread tid so far, or -1. */
static long ctxt_switches(pid_t tid)
{
	char path[64], line[128];
	long total = 0, v;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1 ||
		    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &v) == 1) {
			total += v;
			found++;
		}
	}
	fclose(f);
	return found == 2 ? total : -1;
}

static void pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);	/* best effort */
}

static void block_all(void)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
}

/* The state letter of thread tid (R, S, Z...), or '?'. */
static char thread_state(pid_t tid)
{
	char path[64], buf[256], *p = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "re");
	if (f == NULL)
		return '?';
	if (fgets(buf, sizeof(buf), f))
		p = strrchr(buf, ')');
	fclose(f);
	return p && p[1] == ' ' ? p[2] : '?';
}

/* Wait up to 2 s for thread tid to be asleep (S); 1 if it is. */
static int wait_asleep(pid_t tid)
{
	for (int i = 0; i < 200; i++) {
		if (thread_state(tid) == 'S')
			return 1;
		sleep_ms(10);
	}
	return 0;
}

/* Helpers: a thread running user code, one asleep, one asleep in poll(). */
static void *spinner(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		membarrier_light();
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		sleep_ms(1);
	return NULL;
}

/* Asleep in poll(), which a signal interrupts (EINTR, never restarted). */
static int poll_eintr;
static pid_t poller_tid;

static void *poller(void *arg)
{
	struct pollfd pfd = { *(int *)arg, POLLIN, 0 };

	__atomic_store_n(&poller_tid, gettid_(), __ATOMIC_RELEASE);
	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		__atomic_fetch_add(&poll_eintr, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* ---- zombie ------------------------------------------------------------ */

static pthread_t zombie_helpers[3];
static int zombie_pipe[2];

static void *zombie_worker(void *arg)
{
	int errors;

	(void)arg;
	/* The premise: the main thread is a zombie in /proc/self/task. */
	for (int i = 0; i < 100 && thread_state(getpid()) != 'Z'; i++)
		sleep_ms(10);
	CHECK(thread_state(getpid()) == 'Z', "the main thread is in state %c, not Z",
	      thread_state(getpid()));
	/* A poller still on its way into poll() could rightly be signalled. */
	while (__atomic_load_n(&poller_tid, __ATOMIC_ACQUIRE) == 0)
		sleep_ms(1);
	CHECK(wait_asleep(poller_tid), "the poller never fell asleep");
	errors = heavy_n(100);
	CHECK(errors == 0, "%d of 100 heavy barriers failed", errors);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	if (write(zombie_pipe[1], "x", 1) != 1)
		failures++;
	for (int i = 0; i < 3; i++)
		pthread_join(zombie_helpers[i], NULL);
	/* Sleepers are not signalled any more: no EINTR for them. */
	CHECK(poll_eintr == 0, "a thread asleep in poll() got EINTR %d times", poll_eintr);
	printf("# %d heavy barriers with the main thread a zombie\n", 100 - errors);
	fflush(stdout);
	exit(failures ? EXIT_FAILURE : EXIT_SUCCESS);
}

static int case_zombie(void)
{
	pthread_t t;

	child_start(20);
	if (pipe(zombie_pipe) != 0)
		return EXIT_FAILURE;
	pthread_create(&zombie_helpers[0], NULL, spinner, NULL);
	pthread_create(&zombie_helpers[1], NULL, sleeper, NULL);
	pthread_create(&zombie_helpers[2], NULL, poller, &zombie_pipe[0]);
	pthread_create(&t, NULL, zombie_worker, NULL);
	pthread_exit(NULL);
}

/* ---- sigwait ----------------------------------------------------------- */

#define MAX_GOT 64
static int got[MAX_GOT], ngot;
static pid_t consumer_tid;

static void *consumer(void *arg)
{
	sigset_t all;

	(void)arg;
	__atomic_store_n(&consumer_tid, gettid_(), __ATOMIC_RELEASE);
	sigfillset(&all);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&all, &si);

		if (sig < 0)
			continue;
		if (ngot < MAX_GOT)
			got[ngot++] = sig;
		printf("# consumer got signal %d\n", sig);
		fflush(stdout);
		if (sig == SIGALRM) {
			/* Our own hang guard, which every thread blocks. */
			printf("# FAILED: hung (SIGALRM)\n");
			fflush(stdout);
			_exit(3);
		}
		if (sig == SIGUSR1)
			return NULL;
	}
}

static void *sigwait_heavy(void *arg)
{
	*(int *)arg = heavy_n(100);
	return NULL;
}

/* Every signal blocked, a sigwaitinfo() consumer asleep, 100 heavies. */
static int sigwait_scenario(void)
{
	pthread_t cons, heavy, helper;
	int errors = -1, lib = 0;

	block_all();	/* before any thread: every thread inherits it */
	pthread_create(&cons, NULL, consumer, NULL);
	pthread_create(&helper, NULL, sleeper, NULL);
	/* The consumer is asleep in sigwaitinfo(): a running one could rightly
	 * be sent the signal (and take it). */
	while (__atomic_load_n(&consumer_tid, __ATOMIC_ACQUIRE) == 0)
		sleep_ms(1);
	CHECK(wait_asleep(consumer_tid), "the consumer never fell asleep");
	pthread_create(&heavy, NULL, sigwait_heavy, &errors);
	pthread_join(heavy, NULL);
	CHECK(errors == 0, "%d of 100 heavy barriers failed", errors);
	pthread_kill(cons, SIGUSR1);
	pthread_join(cons, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(helper, NULL);
	for (int i = 0; i < ngot; i++)
		lib |= got[i] == strategy.signal;
	CHECK(!lib, "the consumer received the library's signal %d", strategy.signal);
	CHECK(ngot == 1 && got[0] == SIGUSR1, "the consumer got %d signals, not SIGUSR1 only",
	      ngot);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

static int case_sigwait(void)
{
	child_start(20);
	return sigwait_scenario();
}

/* ---- not dumpable ------------------------------------------------------- */

/*
 * A process that is not dumpable (it changed credentials, or said so with
 * PR_SET_DUMPABLE, as sshd or gpg-agent do) cannot read its own
 * /proc/self/task/TID/syscall (0400, owned by root then): the library must
 * tell sleepers by /proc/self/task/TID/wchan, or it would signal them all,
 * and the sigwaitinfo() consumer would take its signal.  As root the case
 * first becomes nobody: root reads the file anyway.
 */

static const char *self_argv0;

/*
 * Become not dumpable (as root, nobody first): /proc/self/task/TID/syscall
 * must be unreadable.  0, or SKIP_STATUS (printed why) where wchan is
 * missing too.
 */
static int become_nondumpable(void)
{
	char path[64];
	int fd;

	if (geteuid() == 0 &&
	    (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)) {
		printf("# FAILED: cannot become uid 65534: %s\n", strerror(errno));
		exit(EXIT_FAILURE);
	}
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
		printf("# FAILED: PR_SET_DUMPABLE: %s\n", strerror(errno));
		exit(EXIT_FAILURE);
	}
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)gettid_());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd < 0 && errno == EACCES, "%s is readable: the case proves nothing", path);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "/proc/self/task/%d/wchan", (int)gettid_());
	if (access(path, R_OK) != 0) {
		printf("SKIP: no %s (a kernel without CONFIG_KALLSYMS): such a process's sleepers "
		       "cannot be told from runners, see membarrier(3)\n", path);
		return SKIP_STATUS;
	}
	return 0;
}

static int case_nondumpable(void)
{
	int ret;

	child_start(30);
	ret = become_nondumpable();
	if (ret != 0) {
		fflush(stdout);
		_exit(ret);
	}
	return sigwait_scenario();
}

/* ---- old kernel -------------------------------------------------------- */

static pid_t target_tid;

/* Asleep with every signal blocked, until told. */
static void *blocked_sleeper(void *arg)
{
	(void)arg;
	block_all();
	__atomic_store_n(&target_tid, gettid_(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		sleep_ms(10);
	return NULL;
}

static int case_old_kernel(void)
{
	struct utsname u;
	int p[2], errors, eintr, ret, major = 0, minor = 0;
	pthread_t t, t2;
	double t0, dt;

	if (test_emulator() != NULL && geteuid() == 0) {
		/* setresuid() there changes the calling thread only: qemu's own
		 * helper thread stays root, blocks every signal and sleeps, and
		 * nobody may move it between CPUs (EPERM). */
		printf("SKIP: under qemu-user as root: becoming nobody leaves qemu's own "
		       "thread root, which no barrier can then reach\n");
		return SKIP_STATUS;
	}
	if (!(personality(0xffffffff) & UNAME26)) {
		/* The library reads uname() at start-up: set it, then exec. */
		if (personality((unsigned long)personality(0xffffffff) | UNAME26) < 0) {
			printf("# FAILED: personality(UNAME26): %s\n", strerror(errno));
			return EXIT_FAILURE;
		}
		test_reexec(self_argv0, "--case", "old-kernel");
		printf("# FAILED: re-exec: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}
	child_start(20);
	/* 2.6.x from the kernel; qemu-user says 3.8.0 itself. */
	if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2 ||
	    major > 5 || (major == 5 && minor >= 16)) {
		printf("SKIP: uname() says %s under personality UNAME26, not before 5.16\n",
		       u.release);
		return SKIP_STATUS;
	}
	printf("# uname() says %s\n", u.release);
	ret = become_nondumpable();
	if (ret != 0)
		return ret;
	if (pipe(p) != 0)
		return EXIT_FAILURE;
	pthread_create(&t, NULL, poller, &p[0]);
	pthread_create(&t2, NULL, blocked_sleeper, NULL);
	while (__atomic_load_n(&poller_tid, __ATOMIC_ACQUIRE) == 0 ||
	       __atomic_load_n(&target_tid, __ATOMIC_ACQUIRE) == 0)
		sleep_ms(1);
	CHECK(wait_asleep(poller_tid) && wait_asleep(target_tid), "a thread never fell asleep");
	t0 = now();
	errors = heavy_n(20);
	dt = now() - t0;
	eintr = __atomic_load_n(&poll_eintr, __ATOMIC_RELAXED);
	printf("# 20 heavy barriers in %.3f s: the thread asleep in poll() got EINTR %d times\n",
	       dt, eintr);
	CHECK(errors == 0, "%d of 20 heavy barriers failed", errors);
	CHECK(eintr > 0, "a thread asleep was trusted to wchan before 5.16: never signalled");
	/* The sleeper that blocks every signal: moved between CPUs, not
	 * waited for (10 s, then an abort). */
	CHECK(dt < 5, "20 heavy barriers took %.3f s", dt);
	if (write(p[1], "x", 1) != 1)
		failures++;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	pthread_join(t2, NULL);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- io-uring ---------------------------------------------------------- */

/* The tid of a thread whose comm starts with prefix, or 0. */
static pid_t find_thread(const char *prefix)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;

	if (d == NULL)
		return 0;
	while (tid == 0 && (e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) && strncmp(comm, prefix, strlen(prefix)) == 0)
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	closedir(d);
	return tid;
}

static int case_io_uring(void)
{
	struct io_uring_params p;
	pthread_t t;
	pid_t sqp = 0;
	int fd, errors;

	child_start(20);
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_SQPOLL;
	p.sq_thread_idle = 2000;	/* ms: the poller stays busy meanwhile */
	fd = (int)syscall(SYS_io_uring_setup, 8, &p);
	if (fd < 0) {
		int err = errno;

		if (err == ENOSYS || err == EPERM || err == EINVAL) {
			printf("SKIP: io_uring_setup: %s\n", strerror(err));
			return SKIP_STATUS;
		}
		printf("# FAILED: io_uring_setup: %s\n", strerror(err));
		return EXIT_FAILURE;
	}
	for (int i = 0; i < 100 && sqp == 0; i++) {
		sqp = find_thread("iou-sqp-");
		if (sqp == 0)
			sleep_ms(10);
	}
	CHECK(sqp != 0, "no iou-sqp-* thread in /proc/self/task");
	if (sqp)
		printf("# SQPOLL thread %d\n", (int)sqp);
	pthread_create(&t, NULL, spinner, NULL);
	errors = heavy_n(100);
	CHECK(errors == 0, "%d of 100 heavy barriers failed", errors);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	close(fd);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- blocked and spinning ---------------------------------------------- */

enum { PH_START, PH_SPIN, PH_SLEEP, PH_AWAKE };
static int phase;

/* arg 0: spin 300 ms, sleep 1 s, then idle asleep; arg 1: spin forever. */
static void *blocked_thread(void *arg)
{
	double end;

	block_all();
	pin_self(1);
	target_tid = gettid_();
	end = now() + 0.3;
	__atomic_store_n(&phase, PH_SPIN, __ATOMIC_RELEASE);
	if (arg)
		for (;;)
			__asm__ __volatile__("" : : : "memory");
	while (now() < end)
		;
	__atomic_store_n(&phase, PH_SLEEP, __ATOMIC_RELEASE);
	sleep_ms(1000);
	__atomic_store_n(&phase, PH_AWAKE, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		sleep_ms(10);
	return NULL;
}

static int case_blocked(void)
{
	static const char *const names[] = { "starting", "spinning", "asleep", "awake" };
	long before, after;
	double t0;
	pthread_t t;
	int ret, ph;

	child_start(20);
	pin_self(0);
	pthread_create(&t, NULL, blocked_thread, NULL);
	while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) == PH_START)
		sched_yield();
	before = ctxt_switches(target_tid);
	t0 = now();
	ret = membarrier_heavy();
	ph = __atomic_load_n(&phase, __ATOMIC_ACQUIRE);
	after = ctxt_switches(target_tid);
	printf("# heavy returned %d after %.3f s, the thread %s, %ld -> %ld context switches\n",
	       ret, now() - t0, names[ph], before, after);
	CHECK(ret == 0, "heavy returned %d (%s)", ret, strerror(errno));
	CHECK(before >= 0 && after > before,
	      "heavy returned but the blocked thread was never switched out");
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Spins until told (12 s at most) with every signal blocked, on CPU 1, as
 * SCHED_FIFO where that is allowed: then the scheduler does not preempt
 * it for about a second (RT throttling, the fair server), and only the
 * library's forced switch can get a barrier on it sooner.
 */
static int spinner_fifo;	/* 1, or the error that refused it */

static void *spinning_thread(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };
	double end = now() + 12;
	int err;

	(void)arg;
	block_all();
	pin_self(1);
	err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	spinner_fifo = err == 0 ? 1 : err;
	target_tid = gettid_();
	__atomic_store_n(&phase, PH_SPIN, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED) && now() < end)
		;
	return NULL;
}

static int case_spinning(void)
{
	struct sched_param sp = { .sched_priority = 2 }, other = { .sched_priority = 0 };
	cpu_set_t set_before, set_after;
	long before, after;
	pthread_t t;
	double t0, dt;
	int ret;

	child_start(30);
	pin_self(0);
	pthread_create(&t, NULL, spinning_thread, NULL);
	while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) == PH_START)
		sched_yield();
	/* Above the spinner: moved onto our CPU for a moment, it must not
	 * keep us from moving it back. */
	if (spinner_fifo == 1)
		CHECK(pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0,
		      "cannot make the caller SCHED_FIFO");
	else
		printf("# SCHED_FIFO refused (%s): the scheduler may preempt the spinner "
		       "before the library forces a switch; no bound on the time\n",
		       strerror(spinner_fifo));
	CHECK(sched_getaffinity(target_tid, sizeof(set_before), &set_before) == 0,
	      "sched_getaffinity: %s", strerror(errno));
	before = ctxt_switches(target_tid);
	t0 = now();
	ret = membarrier_heavy();
	dt = now() - t0;
	after = ctxt_switches(target_tid);
	CHECK(sched_getaffinity(target_tid, sizeof(set_after), &set_after) == 0 &&
	      CPU_EQUAL(&set_before, &set_after),
	      "the spinning thread's CPU affinity was not restored");
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
	printf("# heavy returned %d after %.3f s; the spinning thread (%s): %ld -> %ld "
	       "context switches\n", ret, dt, spinner_fifo == 1 ? "SCHED_FIFO" : "SCHED_OTHER",
	       before, after);
	CHECK(ret == 0, "heavy returned %d", ret);
	CHECK(before >= 0 && after > before,
	      "heavy returned without a barrier on the spinning thread");
	CHECK(spinner_fifo != 1 || dt < 0.5,
	      "heavy took %.3f s: no switch forced on the spinning thread", dt);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- exec -------------------------------------------------------------- */

static int exec_go;

/* Blocks every signal, spins 200 ms (running when the barrier lists it),
 * sleeps until told, then execve()s this program with --exec-child. */
static void *exec_thread(void *arg)
{
	double end;

	(void)arg;
	block_all();
	target_tid = gettid_();
	end = now() + 0.2;
	__atomic_store_n(&phase, PH_SPIN, __ATOMIC_RELEASE);
	while (now() < end)
		;
	__atomic_store_n(&phase, PH_SLEEP, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&exec_go, __ATOMIC_ACQUIRE))
		sleep_ms(5);
	test_reexec(self_argv0, "--exec-child", "-");
	printf("# FAILED: exec: %s\n", strerror(errno));
	_exit(EXIT_FAILURE);
}

static int case_exec(void)
{
	pthread_t t;
	int ret;

	child_start(20);
	pthread_create(&t, NULL, exec_thread, NULL);
	while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) == PH_START)
		sched_yield();
	ret = membarrier_heavy();
	printf("# heavy returned %d with the blocking thread %s\n", ret,
	       __atomic_load_n(&phase, __ATOMIC_ACQUIRE) == PH_SPIN ? "spinning" : "asleep");
	CHECK(ret == 0, "heavy returned %d (%s)", ret, strerror(errno));
	if (failures)
		return EXIT_FAILURE;
	__atomic_store_n(&exec_go, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);	/* the exec ends this program */
	return EXIT_FAILURE;
}

/* The program the exec case runs: a signal still pending kills it here. */
static int exec_child(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	printf("# the exec'd program unblocked every signal and lives\n");
	fflush(stdout);
	return EXIT_SUCCESS;
}

/* ---- no descriptor free ------------------------------------------------ */

static int nofile_first, nofile_last;

/* Lower RLIMIT_NOFILE to 64 and take every descriptor left. */
static void exhaust_fds(void)
{
	struct rlimit rl;
	int fd;

	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "getrlimit: %s", strerror(errno));
	if (rl.rlim_cur > 64)
		rl.rlim_cur = 64;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "setrlimit: %s", strerror(errno));
	nofile_first = -1;
	while ((fd = dup(STDIN_FILENO)) >= 0) {
		if (nofile_first < 0)
			nofile_first = fd;
		nofile_last = fd;
	}
	CHECK(errno == EMFILE, "dup: %s, not EMFILE", strerror(errno));
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	CHECK(fd < 0 && errno == EMFILE, "a descriptor is still free: the case proves nothing");
	printf("# descriptors %d..%d taken, none left\n", nofile_first, nofile_last);
}

/* Are the descriptors exhaust_fds() took still open (the library closed
 * none of them)?  Then give one back. */
static void check_fds(void)
{
	int closed = 0;

	for (int fd = nofile_first; fd <= nofile_last; fd++)
		closed += fcntl(fd, F_GETFD) < 0;
	CHECK(closed == 0, "%d of the program's descriptors were closed under it", closed);
	close(nofile_last);
}

static int case_nofile_first(void)
{
	pthread_t t[2];
	int errors;

	child_start(20);
	pthread_create(&t[0], NULL, spinner, NULL);
	pthread_create(&t[1], NULL, sleeper, NULL);
	exhaust_fds();
	errors = heavy_n(10);
	printf("# 10 heavy barriers with no descriptor free: %d failed\n", errors);
	CHECK(errors == 0, "%d of 10 heavy barriers failed", errors);
	check_fds();
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

static void *blocked_spinner(void *arg)
{
	(void)arg;
	block_all();
	target_tid = gettid_();
	__atomic_store_n(&phase, PH_SPIN, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

static int case_nofile_blocked(void)
{
	long before, after;
	pthread_t t;
	double t0, dt;
	int ret;

	child_start(20);
	CHECK(membarrier_heavy() == 0, "the first heavy barrier failed");
	pthread_create(&t, NULL, blocked_spinner, NULL);
	while (__atomic_load_n(&phase, __ATOMIC_ACQUIRE) == PH_START)
		sched_yield();
	before = ctxt_switches(target_tid);
	exhaust_fds();
	t0 = now();
	ret = membarrier_heavy();
	dt = now() - t0;
	check_fds();
	after = ctxt_switches(target_tid);
	printf("# heavy returned %d after %.3f s; the blocking thread: %ld -> %ld "
	       "context switches\n", ret, dt, before, after);
	CHECK(ret == 0, "heavy returned %d", ret);
	CHECK(dt < 5, "heavy took %.3f s", dt);
	CHECK(before >= 0 && after > before,
	      "heavy returned but the blocking thread was never switched out");
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- churn ------------------------------------------------------------- */

static void *churn_heavy(void *arg)
{
	int errors = heavy_n(500);

	__atomic_fetch_add((int *)arg, errors, __ATOMIC_RELAXED);
	return NULL;
}

static int case_churn(void)
{
	pthread_t helpers[5], callers[3];
	int errors = 0;
	double t0;

	child_start(60);
	pthread_create(&helpers[0], NULL, spinner, NULL);
	pthread_create(&helpers[1], NULL, spinner, NULL);
	pthread_create(&helpers[2], NULL, sleeper, NULL);
	pthread_create(&helpers[3], NULL, test_churner, (void *)&stop);
	pthread_create(&helpers[4], NULL, test_churner, (void *)&stop);
	t0 = now();
	for (int i = 0; i < 3; i++)
		pthread_create(&callers[i], NULL, churn_heavy, &errors);
	churn_heavy(&errors);
	for (int i = 0; i < 3; i++)
		pthread_join(callers[i], NULL);
	printf("# 2000 heavy barriers from 4 threads in %.2f s\n", now() - t0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 5; i++)
		pthread_join(helpers[i], NULL);
	CHECK(errors == 0, "%d of 2000 heavy barriers failed", errors);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * One caller, so every call reuses the same per-call state (one slot of
 * the library's), while three threads create and join threads: the thread
 * list changes between any two reads of it, every call.
 */
static int case_churn_one(void)
{
	pthread_t helpers[3];
	int errors;
	double t0;

	child_start(60);
	for (int i = 0; i < 3; i++)
		pthread_create(&helpers[i], NULL, test_churner, (void *)&stop);
	t0 = now();
	errors = heavy_n(3000);
	printf("# 3000 heavy barriers from one thread in %.2f s\n", now() - t0);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 3; i++)
		pthread_join(helpers[i], NULL);
	CHECK(errors == 0, "%d of 3000 heavy barriers failed", errors);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- the parent -------------------------------------------------------- */

struct tcase {
	const char *name;
	int (*run)(void);
	int bound;		/* seconds before the parent kills the child */
	const char *what;
};

static const struct tcase cases[] = {
	{ "zombie", case_zombie, 30,
	  "main thread a zombie after pthread_exit(): 100 heavy barriers return, exit 0" },
	{ "sigwait", case_sigwait, 30,
	  "all signals blocked, a sigwaitinfo() consumer: heavy returns, consumer gets SIGUSR1 only" },
	{ "nondumpable", case_nondumpable, 40,
	  "not dumpable (syscall file unreadable), a sigwaitinfo() consumer: heavy returns, consumer gets SIGUSR1 only" },
	{ "old-kernel", case_old_kernel, 30,
	  "not dumpable, on a kernel before 5.16 (UNAME26): a thread asleep in poll() is signalled, not trusted to wchan" },
	{ "io-uring", case_io_uring, 30,
	  "an io_uring SQPOLL thread: 100 heavy barriers return" },
	{ "blocked", case_blocked, 30,
	  "a thread spinning with all signals blocked, then asleep: heavy returns 0 once it is switched out" },
	{ "spinning", case_spinning, 40,
	  "a thread spinning (SCHED_FIFO where allowed) with all signals blocked: heavy forces a switch on it and returns 0 within 0.5 s" },
	{ "exec", case_exec, 30,
	  "a thread blocking every signal, running when listed, then execve(): the new program is not killed by the library's signal" },
	{ "nofile-first", case_nofile_first, 30,
	  "no descriptor free before the first heavy barrier: 10 heavy barriers return 0" },
	{ "nofile-blocked", case_nofile_blocked, 30,
	  "no descriptor free after a first barrier, a thread spinning with every signal blocked: heavy returns 0 within 5 s" },
	{ "churn", case_churn, 75,
	  "2000 heavy barriers from 4 threads amid thread churn return 0" },
	{ "churn-one", case_churn_one, 75,
	  "3000 heavy barriers from one thread while 3 threads churn return 0" },
};
#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

/* Append what fd has to buf (NUL-terminated); 0 at end of file. */
static int drain(int fd, char *buf, size_t size, size_t *len)
{
	ssize_t n;

	if (*len + 1 >= size) {
		char junk[512];

		return read(fd, junk, sizeof(junk)) > 0;
	}
	n = read(fd, buf + *len, size - 1 - *len);
	if (n > 0) {
		*len += (size_t)n;
		buf[*len] = '\0';
	}
	return n > 0 || (n < 0 && errno == EINTR);
}

static void print_as_comments(const char *label, const char *text)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		if (strncmp(p, "SKIP: ", 6) == 0)
			;	/* reported on the test line */
		else if (strncmp(p, "# ", 2) == 0)
			printf("%.*s\n", len, p);
		else
			printf("# %s%.*s\n", label, len, p);
		p += len + (nl != NULL);
	}
}

static void run_case(const struct tcase *c, const char *argv0)
{
	char out[8192] = "", err[8192] = "";
	size_t outlen = 0, errlen = 0;
	int po[2], pe[2], status = 0, reaped = 0, killed = 0;
	int open_o = 1, open_e = 1;
	double deadline = now() + c->bound, t0 = now();
	const char *skip;
	pid_t pid;

	if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0)
		tap_bail("pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		tap_bail("fork: %s", strerror(errno));
	if (pid == 0) {
		setenv("LIBMEMBARRIER_HEAVY", "signal", 1);
		unsetenv("LIBMEMBARRIER_SIGNAL");
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		test_reexec(argv0, "--case", c->name);
		_exit(97);
	}
	close(po[1]);
	close(pe[1]);
	while (!reaped || open_o || open_e) {
		struct pollfd fds[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };

		if (!reaped && waitpid(pid, &status, WNOHANG) == pid)
			reaped = 1;
		if (!reaped && now() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			reaped = killed = 1;
		}
		fds[0].fd = open_o ? po[0] : -1;
		fds[1].fd = open_e ? pe[0] : -1;
		if (poll(fds, 2, 100) > 0) {
			if (open_o && (fds[0].revents & (POLLIN | POLLHUP)))
				open_o = drain(po[0], out, sizeof(out), &outlen);
			if (open_e && (fds[1].revents & (POLLIN | POLLHUP)))
				open_e = drain(pe[0], err, sizeof(err), &errlen);
		}
	}
	close(po[0]);
	close(pe[0]);

	print_as_comments("", out);
	print_as_comments("stderr: ", err);
	if (killed) {
		tap_ok(0, "%s: hung, killed after %d s", c->what, c->bound);
		return;
	}
	printf("# %s: status 0x%x after %.1f s\n", c->name, (unsigned int)status, now() - t0);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
		tap_ok(0, "%s: hung (the child's alarm fired)", c->what);
		return;
	}
	skip = strstr(out, "SKIP: ");
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_STATUS && skip) {
		const char *nl = strchr(skip, '\n');

		printf("ok - %s # SKIP %.*s\n", c->what,
		       nl ? (int)(nl - skip - 6) : (int)strlen(skip + 6), skip + 6);
		fflush(stdout);
		tap_run++;
		return;
	}
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s (status 0x%x)",
	       c->what, (unsigned int)status);
}

int main(int argc, char **argv)
{
	self_argv0 = argv[0];
	if (argc == 3 && strcmp(argv[1], "--exec-child") == 0)
		return exec_child();
	if (argc == 3 && strcmp(argv[1], "--case") == 0) {
		for (int i = 0; i < NCASES; i++)
			if (strcmp(argv[2], cases[i].name) == 0)
				return cases[i].run();
		return 2;
	}
	/* Run some cases only: signal-cases NAME... */
	tap_plan(argc > 1 ? argc - 1 : NCASES);
	for (int i = 0; i < NCASES; i++) {
		int chosen = argc == 1;

		for (int j = 1; j < argc; j++)
			chosen |= strcmp(argv[j], cases[i].name) == 0;
		if (chosen)
			run_case(&cases[i], argv[0]);
	}
	return tap_exit();
}
