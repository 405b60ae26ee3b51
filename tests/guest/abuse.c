// SPDX-License-Identifier: MIT
/*
 * abuse: the attacks on the abuse controls of MEMBARRIER_CMD_SHARED_EXPEDITED
 * that the review of series v3 found (../shared/notes/review-2026-12-07.md,
 * F2-F4 and F6), each as a guest-side check.  Built static on the host
 * against the patched kernel's headers, run as root in the QEMU guest;
 * prints TAP.
 * Reads the trace event membarrier:membarrier_shared_expedited (trace_clock
 * mono, so that its times compare with CLOCK_MONOTONIC).
 *
 *   abuse slowround SECS   4 CPUs or more.  CPUs 1 and 2 spin in user space
 *                          and CPU 3 loops PRIVATE_EXPEDITED (registered,
 *                          uid 1001, with a thread spinning on CPU 1), so
 *                          that under TCG on a 2-core host every IPI waits
 *                          for the host and a round takes milliseconds.
 *                          One thread of uid 1002 loops SHARED_EXPEDITED on
 *                          CPU 0.  With max_rate 1000 the rounds may hold
 *                          membarrier_ipi_mutex at most 0.55 of the time
 *                          (the sum of the event's round_ns over the
 *                          phase), and every PRIVATE_EXPEDITED call ends
 *                          within 3 x the longest round of the phase; with
 *                          max_rate 0 (unlimited, the control) the share
 *                          is above 0.55.
 *   abuse debt             2 CPUs.  The honest caller (uid 1000, CPU 1)
 *                          calls every 10 ms.  64 processes of uids
 *                          2000-2063 loop SHARED_EXPEDITED on CPU 0 for 1 s
 *                          and are killed: from 200 ms after that, every
 *                          honest call runs in its budget lane again
 *                          (outcome ran or joined, not paced), and during
 *                          the crowd at least one was paced.  Then the
 *                          same with max_rate 1 for 1 s, then 1000.
 *   abuse comeback SECS    2 CPUs.  Budgeted rounds (outcome ran) per
 *                          second of uid 3000, one process looping
 *                          SHARED_EXPEDITED for 7 ms of every 10 for SECS,
 *                          against uid 3001 doing the same from a new
 *                          process each time, which exits after its 7 ms
 *                          (100 a second, none left between them); uid
 *                          3002 calls every 20 ms throughout, so that two
 *                          users share the budgets.  The one that comes
 *                          back may not get more than 1.2 x + 10 / s of
 *                          the one that stays; the control, a new uid
 *                          each time (a fresh budget: what v3 gave a uid
 *                          that came back), gets more.
 *   abuse subuid SECS      2 CPUs.  uid 1003 owns a user namespace whose
 *                          uid_map (written by root, as newuidmap does
 *                          from /etc/subuid) maps 65536 uids from 100000;
 *                          in it, 64 copies of this program are made
 *                          setuid to its uids 1-64 (host uids 100000-
 *                          100063).  uid 1003 runs them from the initial
 *                          namespace; each makes its effective uid its
 *                          real uid (setresuid, no privilege needed) and
 *                          loops SHARED_EXPEDITED on CPU 0: 64 users of
 *                          init_user_ns, which the kernel cannot tell
 *                          from real ones.  The honest caller's p99
 *                          (uid 1000, every 10 ms on CPU 1) must stay
 *                          within its unloaded p99 + 2 / max_rate + the
 *                          longest round of the phase, and none of its
 *                          calls be served by a grace period.
 *   abuse oncpu SECS       2 CPUs.  20 processes of uids 6000-6019 on CPU 1,
 *                          the honest caller's (uid 1000, every 10 ms): in
 *                          the control they loop getppid(), in the attack
 *                          SHARED_EXPEDITED.  The attack may not add more
 *                          than 2 % of the honest calls over 10 ms to the
 *                          control's.
 *   abuse herd SECS [RATE] 3 CPUs.  With max_rate RATE (default 10: a
 *                          paced round every 133 ms, so that the herd is
 *                          asleep between them), threads of uid 5000 loop
 *                          SHARED_EXPEDITED on CPU 2, 10 of them for SECS,
 *                          then 4000 (each round must serve at least 2000
 *                          of their calls); the honest caller (uid 1005,
 *                          then 1006: a fresh budget) calls every 20 ms on
 *                          CPU 1.  Of its calls that ran a round (budgeted
 *                          or paced), the median time spent beside the round
 *                          and awake (the event's duration_ns - round_ns
 *                          - wait_ns: admission, and the wake-ups of the
 *                          callers its round served) with 4000 may be at
 *                          most 2 x that with 10.  Needs 1 GiB.
 *   abuse rtwait SECS      4 CPUs.  Two SCHED_FIFO callers on CPUs 0 and 1
 *                          under SCHED_FIFO spinners there, 32 waiters of
 *                          normal policy, unbound kernel workers confined
 *                          to CPUs 0 and 1, RT throttling off: every call
 *                          of the RT callers ends within 100 ms, which it
 *                          does only if a round's runner wakes them (a
 *                          worker of normal policy gets no CPU there).
 *   abuse attack SECS      (what the setuid copies run)
 *
 * Each phase also prints one "RESULT label=PHASE name=value..." line of
 * its figures, for make bench (section 3c).
 * Exit status: 0 all ok, 1 a check failed, 77 skipped.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../bench/bench.h"
#include "../tap.h"
#include "sysctl.h"

#define TRACEFS "/sys/kernel/tracing"
#define EVENT TRACEFS "/events/membarrier/membarrier_shared_expedited"
#define HERD_FEW 10
#define HERD_MANY 4000
#define HERD_CPU 2

static long mb(int cmd)
{
	return syscall(__NR_membarrier, cmd, 0, 0);
}

static void become(uid_t uid, int cpu)
{
	bench_pin(cpu);
	if (setgid(uid) || setuid(uid)) {
		perror("setuid");
		_exit(1);
	}
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC), ret = 0;

	if (fd < 0)
		return -1;
	if (write(fd, s, strlen(s)) < 0)
		ret = -1;
	close(fd);
	return ret;
}

static pid_t fork_or_die(void)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* This process SCHED_FIFO @prio, or exit. */
static void rt_self(int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
		perror("sched_setscheduler");
		_exit(1);
	}
}

/* @uid on @cpu, SCHED_FIFO @prio if not 0: spin until killed. */
static pid_t spinner(uid_t uid, int cpu, int prio)
{
	pid_t pid = fork_or_die();

	if (!pid) {
		volatile unsigned long n = 0;

		if (prio)
			rt_self(prio);
		become(uid, cpu);
		for (;;)
			n++;
	}
	return pid;
}

/* One call as the trace event reports it. */
struct call {
	double t;		/* end of the call, CLOCK_MONOTONIC seconds */
	unsigned int uid;
	char outcome[16];
	double duration_ns;
	double round_ns;	/* -1: the kernel's event has no round_ns */
	double wait_ns;		/* -1: nor wait_ns */
};

static struct call *calls;
static int ncalls;

static int trace_start(void)
{
	int fd;

	if (access(EVENT, F_OK) && mount("tracefs", TRACEFS, "tracefs", 0, NULL))
		return -1;
	if (write_str(EVENT "/enable", "0") || write_str(TRACEFS "/trace_clock", "mono") ||
	    write_str(TRACEFS "/buffer_size_kb", "8192"))
		return -1;
	fd = open(TRACEFS "/trace", O_WRONLY | O_TRUNC);	/* empties it */
	if (fd < 0)
		return -1;
	close(fd);
	return write_str(EVENT "/enable", "1");
}

/* Reads the events into calls[]; returns their number, -1 on error. */
static int trace_stop(void)
{
	char line[512], *p, *q;
	FILE *f;

	write_str(EVENT "/enable", "0");
	f = fopen(TRACEFS "/trace", "r");
	if (!f)
		return -1;
	free(calls);
	calls = NULL;
	ncalls = 0;
	while (fgets(line, sizeof(line), f)) {
		struct call c;

		p = strstr(line, ": membarrier_shared_expedited:");
		if (!p || line[0] == '#')
			continue;
		*p = 0;
		q = strrchr(line, ' ');	/* the timestamp before the event name */
		if (!q || sscanf(q, "%lf", &c.t) != 1)
			continue;
		p += strlen(": membarrier_shared_expedited:");
		if (sscanf(p, " uid=%u outcome=%15s duration_ns=%lf", &c.uid, c.outcome,
			   &c.duration_ns) != 3)
			continue;
		q = strstr(p, "round_ns=");
		c.round_ns = q ? strtod(q + 9, NULL) : -1;
		q = strstr(p, "wait_ns=");
		c.wait_ns = q ? strtod(q + 8, NULL) : -1;
		if (ncalls % 1024 == 0) {
			calls = realloc(calls, (ncalls + 1024) * sizeof(*calls));
			if (!calls)
				abort();
		}
		calls[ncalls++] = c;
	}
	fclose(f);
	return ncalls;
}

static int is(const struct call *c, const char *outcome)
{
	return !strcmp(c->outcome, outcome);
}

/* --- slowround ---------------------------------------------------------- */

struct probe {
	long calls;
	double worst;
	int failed;
};

/* uid 1001: registered PRIVATE_EXPEDITED in a loop on CPU 3, its second
 * thread spinning on CPU 1 so that each call interrupts it. */
static void *probe_spin(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	bench_pin(1);
	for (;;)
		n++;
	return NULL;
}

static void probe(struct probe *p, double secs)
{
	pthread_t th;
	double t0, a, b;

	become(1001, 3);
	if (mb(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)) {
		p->failed = 1;
		_exit(1);
	}
	pthread_create(&th, NULL, probe_spin, NULL);
	usleep(100000);
	t0 = bench_now();
	do {
		a = bench_now();
		if (mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
			p->failed = 1;
			break;
		}
		b = bench_now();
		p->calls++;
		if (b - a > p->worst)
			p->worst = b - a;
	} while (b - t0 < secs);
	_exit(0);
}

/* One phase: the probe for @secs, with the attacker if @attack. Returns
 * the trace's rounds in *share (of the phase's time) and *longest. */
static void slow_phase(const char *label, double secs, int attack, struct probe *p,
		       double *share, double *longest, int *nrounds, int *exact)
{
	pid_t pp, att = 0;
	double t0, t1, held = 0;
	int i;

	memset(p, 0, sizeof(*p));
	*longest = 0;
	*nrounds = 0;
	*exact = 1;
	trace_start();
	if (attack) {
		att = fork_or_die();
		if (!att) {
			become(1002, 0);
			for (;;)
				if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
					_exit(1);
		}
	}
	t0 = bench_now();
	pp = fork_or_die();
	if (!pp)
		probe(p, secs);
	waitpid(pp, NULL, 0);
	t1 = bench_now();
	if (att)
		stop(att);
	trace_stop();
	for (i = 0; i < ncalls; i++) {
		double r = calls[i].round_ns;

		if (calls[i].t < t0 || calls[i].t - calls[i].duration_ns / 1e9 > t1)
			continue;
		if (r < 0) {
			/* Series v3 has no round_ns: a runner's whole call, an
			 * upper bound of its round. */
			*exact = 0;
			r = is(&calls[i], "ran") ? calls[i].duration_ns : 0;
		}
		if (r > 0) {
			held += r / 1e9;
			(*nrounds)++;
			if (r / 1e9 > *longest)
				*longest = r / 1e9;
		}
	}
	*share = held / (t1 - t0);
	printf("# %s: PRIVATE_EXPEDITED %ld calls in %.2f s (%.0f/s), worst %.1f ms; %d SHARED rounds held the mutex %.3f of the time%s, longest %.1f ms\n",
	       label, p->calls, t1 - t0, p->calls / (t1 - t0), p->worst * 1e3, *nrounds, *share,
	       *exact ? "" : " (no round_ns: runners' call times)", *longest * 1e3);
}

static int cmd_slowround(double secs)
{
	struct probe *p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long saved = read_long(SYSCTL_MAX_RATE);
	double share, longest, alone_rate, result, result_longest, result_worst, result_pct;
	pid_t s1, s2;
	int n, exact;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 4 || p == MAP_FAILED || saved < 0 ||
	    trace_start()) {
		printf("1..0 # SKIP needs 4 CPUs, %s and the trace event\n", SYSCTL_MAX_RATE);
		return 77;
	}
	tap_plan(6);
	s1 = spinner(1004, 1, 0);
	s2 = spinner(1004, 2, 0);
	write_long(SYSCTL_MAX_RATE, 1000);
	slow_phase("alone", secs, 0, p, &share, &longest, &n, &exact);
	alone_rate = p->calls / secs;
	tap_ok(!p->failed && p->calls > 0, "alone: PRIVATE_EXPEDITED made %ld calls", p->calls);

	slow_phase("max_rate 1000", secs, 1, p, &share, &longest, &n, &exact);
	result = share;
	result_longest = longest;
	result_worst = p->worst;
	result_pct = alone_rate > 0 ? 100.0 * p->calls / secs / alone_rate : 0;
	tap_ok(n > 0 && exact && share <= 0.55,
	   "max_rate 1000: SHARED rounds held membarrier_ipi_mutex %.3f of the time (at most 0.55; %d rounds, longest %.1f ms)",
	   share, n, longest * 1e3);
	tap_ok(!p->failed && p->calls > 0 && p->worst <= 3 * longest,
	   "max_rate 1000: every PRIVATE_EXPEDITED call within 3 rounds' time: worst %.1f ms, longest round %.1f ms",
	   p->worst * 1e3, longest * 1e3);
	printf("# PRIVATE_EXPEDITED beside the attacker: %.0f %% of its rate alone\n",
	       alone_rate > 0 ? 100.0 * p->calls / secs / alone_rate : 0);
	tap_ok(longest >= 0.002,
	   "max_rate 1000: the rounds were slow (longest %.1f ms >= 2 ms), as the check needs",
	   longest * 1e3);

	write_long(SYSCTL_MAX_RATE, 0);
	slow_phase("control, max_rate 0", secs, 1, p, &share, &longest, &n, &exact);
	tap_ok(n > 0 && share > 0.55,
	   "control, max_rate 0 (unlimited): the rounds held the mutex %.3f of the time (more than 0.55)",
	   share);
	printf("RESULT label=slowround share=%.3f longest_ms=%.2f private_worst_ms=%.2f private_pct_of_alone=%.0f control_share=%.3f\n",
	       result, result_longest * 1e3, result_worst * 1e3, result_pct, share);
	tap_ok(write_long(SYSCTL_MAX_RATE, saved) == 0, "restore max_rate to %ld", saved);
	stop(s1);
	stop(s2);
	return tap_failed ? 1 : 0;
}

/* --- debt --------------------------------------------------------------- */

/* uid 1000 on CPU 1: SHARED_EXPEDITED every 10 ms for @secs. */
static pid_t honest(double secs)
{
	pid_t pid = fork_or_die();

	if (!pid) {
		double t0;

		become(1000, 1);
		t0 = bench_now();
		while (bench_now() - t0 < secs) {
			if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
				_exit(1);
			usleep(10000);
		}
		_exit(0);
	}
	return pid;
}

/* The honest caller's calls which began in [a, b): how many, how many
 * were paced. */
static void honest_calls(double a, double b, int *n, int *paced)
{
	*n = *paced = 0;
	for (int i = 0; i < ncalls; i++) {
		double begin = calls[i].t - calls[i].duration_ns / 1e9;

		if (calls[i].uid != 1000 || begin < a || begin >= b)
			continue;
		(*n)++;
		*paced += !is(&calls[i], "ran") && !is(&calls[i], "joined");
	}
}

static int cmd_debt(void)
{
	long saved = read_long(SYSCTL_MAX_RATE);
	pid_t h, crowd[64];
	double t_stop, t_end;
	int i, n, paced, status, crowd_paced, after_paced, after_n;

	if (saved < 0 || trace_start()) {
		printf("1..0 # SKIP needs %s and the trace event\n", SYSCTL_MAX_RATE);
		return 77;
	}
	tap_plan(5);
	write_long(SYSCTL_MAX_RATE, 1000);
	trace_start();
	h = honest(2.2);
	usleep(200000);
	for (i = 0; i < 64; i++) {
		crowd[i] = fork_or_die();
		if (!crowd[i]) {
			become(2000 + i, 0);
			for (;;)
				if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
					_exit(1);
		}
	}
	usleep(1000000);
	for (i = 0; i < 64; i++)
		kill(crowd[i], SIGKILL);
	t_stop = bench_now();
	for (i = 0; i < 64; i++)
		waitpid(crowd[i], NULL, 0);
	waitpid(h, &status, 0);
	t_end = bench_now();
	trace_stop();
	honest_calls(t_stop - 1.0, t_stop, &n, &paced);
	printf("# crowd of 64 uids: the honest caller's %d calls during it, %d paced\n", n, paced);
	tap_ok(paced > 0, "crowd of 64 uids: %d of the honest caller's %d calls were paced (the crowd took its share)",
	   paced, n);
	crowd_paced = paced;
	honest_calls(t_stop + 0.2, t_end, &n, &paced);
	tap_ok(WIFEXITED(status) && !WEXITSTATUS(status) && n > 20 && !paced,
	   "from 200 ms after the crowd left: %d of the honest caller's %d calls paced (want 0)",
	   paced, n);
	after_paced = paced;
	after_n = n;
	honest_calls(t_stop, t_stop + 0.2, &n, &paced);
	printf("# in the 200 ms after the crowd left: %d calls, %d paced\n", n, paced);

	write_long(SYSCTL_MAX_RATE, 1);
	trace_start();
	h = honest(2.0);
	usleep(1000000);
	write_long(SYSCTL_MAX_RATE, 1000);
	t_stop = bench_now();
	waitpid(h, &status, 0);
	t_end = bench_now();
	trace_stop();
	honest_calls(t_stop - 1.0, t_stop, &n, &paced);
	tap_ok(paced > 0, "max_rate 1: %d of the honest caller's %d calls were paced", paced, n);
	honest_calls(t_stop + 0.2, t_end, &n, &paced);
	tap_ok(WIFEXITED(status) && !WEXITSTATUS(status) && n > 20 && !paced,
	   "from 200 ms after max_rate went 1 -> 1000: %d of the honest caller's %d calls paced (want 0)",
	   paced, n);
	printf("RESULT label=debt crowd_paced=%d after_crowd_paced=%d after_crowd_calls=%d after_rate_paced=%d after_rate_calls=%d\n",
	       crowd_paced, after_paced, after_n, paced, n);
	tap_ok(write_long(SYSCTL_MAX_RATE, saved) == 0, "restore max_rate to %ld", saved);
	return tap_failed ? 1 : 0;
}

/* --- subuid ------------------------------------------------------------- */

#define SUBUIDS 64

static void loop_for(double secs);

/* The setuid copies: become the owner for real, and loop on CPU 0. */
static int cmd_attack(double secs)
{
	uid_t e = geteuid();

	if (e == getuid() || setresuid(e, e, e))
		return 1;
	bench_pin(0);
	loop_for(secs);
	return 0;
}

/* uid 1000 on CPU 1, every 10 ms for @secs: the latencies of its calls,
 * sorted, in @v (at most 4096); returns how many, -1 on error. */
static int honest_latencies(double secs, double *v)
{
	int fds[2], n = 0;
	double lat;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork_or_die();
	if (!pid) {
		double t0, a;

		close(fds[0]);
		become(1000, 1);
		t0 = bench_now();
		while (bench_now() - t0 < secs) {
			a = bench_now();
			if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
				_exit(1);
			lat = bench_now() - a;
			if (write(fds[1], &lat, sizeof(lat)) != sizeof(lat))
				_exit(1);
			usleep(10000);
		}
		_exit(0);
	}
	close(fds[1]);
	while (n < 4096 && read(fds[0], &v[n], sizeof(v[n])) == sizeof(v[n]))
		n++;
	close(fds[0]);
	waitpid(pid, NULL, 0);
	qsort(v, n, sizeof(v[0]), bench_cmp_double);
	return n;
}

/* The p99 of honest_latencies(). */
static double honest_p99(double secs)
{
	double v[4096];
	int n = honest_latencies(secs, v);

	return n < 10 ? -1 : v[(int)(0.99 * (n - 1) + 0.5)];
}

/* uid 1003's namespace: 64 setuid copies of @self in /subuid. */
static int make_setuid_copies(const char *self)
{
	int go[2], status, i;
	char map[64];
	pid_t pid;

	if (mkdir("/subuid", 0777) && errno != EEXIST)
		return -1;
	chmod("/subuid", 0777);
	if (pipe(go))
		return -1;
	pid = fork_or_die();
	if (!pid) {
		char c, path[64], buf[65536];
		ssize_t n;

		close(go[1]);
		if (setgid(1003) || setuid(1003) || unshare(CLONE_NEWUSER))
			_exit(1);
		if (read(go[0], &c, 1) != 1)	/* the maps are written */
			_exit(1);
		for (i = 1; i <= SUBUIDS; i++) {
			int in = open(self, O_RDONLY), out;

			snprintf(path, sizeof(path), "/subuid/a%d", i);
			out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
			if (in < 0 || out < 0)
				_exit(1);
			while ((n = read(in, buf, sizeof(buf))) > 0)
				if (write(out, buf, n) != n)
					_exit(1);
			close(in);
			close(out);
			/* Owned by namespace uid i (host 100000 + i - 1). */
			if (chown(path, i, -1) || chmod(path, 04755))
				_exit(1);
		}
		_exit(0);
	}
	close(go[0]);
	usleep(100000);
	snprintf(map, sizeof(map), "/proc/%d/uid_map", pid);
	if (write_str(map, "0 1003 1\n1 100000 65536\n"))
		return -1;
	snprintf(map, sizeof(map), "/proc/%d/setgroups", pid);
	write_str(map, "deny");
	snprintf(map, sizeof(map), "/proc/%d/gid_map", pid);
	if (write_str(map, "0 1003 1\n") || write(go[1], "x", 1) != 1)
		return -1;
	close(go[1]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

static int cmd_subuid(const char *self, double secs)
{
	long saved = read_long(SYSCTL_MAX_RATE);
	pid_t att[SUBUIDS];
	double p99_0, p99_1, longest = 0;
	int i, users = 0, gp = 0, seen[SUBUIDS] = { 0 };

	if (saved < 0 || trace_start()) {
		printf("1..0 # SKIP needs %s and the trace event\n", SYSCTL_MAX_RATE);
		return 77;
	}
	tap_plan(4);
	write_long(SYSCTL_MAX_RATE, 1000);
	tap_ok(!make_setuid_copies(self),
	   "uid 1003 made %d copies setuid to the uids of its namespace", SUBUIDS);
	p99_0 = honest_p99(secs);
	trace_start();
	for (i = 0; i < SUBUIDS; i++) {
		att[i] = fork_or_die();
		if (!att[i]) {
			char path[64], arg[32];

			snprintf(path, sizeof(path), "/subuid/a%d", i + 1);
			snprintf(arg, sizeof(arg), "%g", secs + 1);
			if (setgid(1003) || setuid(1003))
				_exit(1);
			execl(path, path, "attack", arg, (char *)NULL);
			_exit(1);
		}
	}
	usleep(300000);
	p99_1 = honest_p99(secs);
	for (i = 0; i < SUBUIDS; i++)
		stop(att[i]);
	trace_stop();
	for (i = 0; i < ncalls; i++) {
		if (calls[i].round_ns / 1e9 > longest)
			longest = calls[i].round_ns / 1e9;
		if (calls[i].uid >= 100000 && calls[i].uid < 100000 + SUBUIDS)
			seen[calls[i].uid - 100000] = 1;
		gp += calls[i].uid == 1000 && is(&calls[i], "grace_period");
	}
	for (i = 0; i < SUBUIDS; i++)
		users += seen[i];
	printf("# honest p99: %.0f us unloaded, %.0f us beside %d subuid users; longest round %.0f us\n",
	       p99_0 * 1e6, p99_1 * 1e6, users, longest * 1e6);
	printf("RESULT label=subuid users=%d honest_p99_unloaded_us=%.0f honest_p99_us=%.0f longest_round_us=%.0f grace_periods=%d\n",
	       users, p99_0 * 1e6, p99_1 * 1e6, longest * 1e6, gp);
	tap_ok(users == SUBUIDS, "%d of the %d setuid copies called as users of their own (uids 100000-100063 in the trace)",
	   users, SUBUIDS);
	tap_ok(p99_0 > 0 && p99_1 > 0 && !gp && p99_1 <= p99_0 + 2.0 / 1000 + longest,
	   "the honest caller's p99 %.0f us <= unloaded %.0f + 2000 + longest round %.0f us; %d grace periods",
	   p99_1 * 1e6, p99_0 * 1e6, longest * 1e6, gp);
	tap_ok(write_long(SYSCTL_MAX_RATE, saved) == 0, "restore max_rate to %ld", saved);
	return tap_failed ? 1 : 0;
}

/* --- comeback ----------------------------------------------------------- */

static void loop_for(double secs)
{
	double t0 = bench_now();

	while (bench_now() - t0 < secs)
		if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
			_exit(1);
}

/* uid 3002 on CPU 1: a call every 20 ms, so that two users share. */
static pid_t background(void)
{
	pid_t pid = fork_or_die();

	if (!pid) {
		become(3002, 1);
		for (;;) {
			if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
				_exit(1);
			usleep(20000);
		}
	}
	return pid;
}

/* Budgeted rounds (outcome ran) per second of uids [@uid, @uid + @n) in
 * [a, b). */
static double ran_per_s(unsigned int uid, unsigned int n, double a, double b)
{
	long k = 0, j = 0, pc = 0;
	double held = 0;

	for (int i = 0; i < ncalls; i++)
		k += calls[i].uid >= uid && calls[i].uid < uid + n && calls[i].t >= a &&
		     calls[i].t < b && is(&calls[i], "ran");
	for (int i = 0; i < ncalls; i++) {
		if (calls[i].uid < uid || calls[i].uid >= uid + n || calls[i].t < a ||
		    calls[i].t >= b)
			continue;
		j += is(&calls[i], "joined");
		pc += is(&calls[i], "paced");
		held += calls[i].round_ns;
	}
	printf("# uid %u%s: ran %ld, joined %ld, paced %ld; its rounds held the mutex %.1f ms\n",
	       uid, n > 1 ? " and up" : "", k, j, pc, held / 1e6);
	return k / (b - a);
}

/*
 * @uid calls in 10 ms cycles for @secs: SHARED_EXPEDITED in a loop for
 * 7 ms of each, then nothing.  With @exit_each, each cycle is a new
 * process, which exits at the end of its 7 ms: no process of @uid is left
 * between cycles; with @exit_each 2, each is also of a new uid (@uid + the
 * cycle's number).  Otherwise one process sleeps between them.  Returns
 * the number of processes.
 */
static long cycles(uid_t uid, double secs, int exit_each)
{
	double t0 = bench_now(), t;
	long k, procs = 0;
	pid_t pid = 0;

	bench_pin(0);
	if (!exit_each) {
		pid = fork_or_die();
		if (pid) {
			waitpid(pid, NULL, 0);
			return 1;
		}
		become(uid, 0);
	}
	for (k = 0; (t = t0 + k * 0.01) < t0 + secs; k++) {
		while (bench_now() < t)
			usleep(200);
		if (exit_each) {
			pid = fork_or_die();
			if (pid) {
				waitpid(pid, NULL, 0);
				procs++;
				continue;
			}
			become(exit_each == 2 ? uid + k : uid, 0);
		}
		while (bench_now() < t + 0.007)
			if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
				_exit(1);
		if (exit_each)
			_exit(0);
	}
	if (!exit_each)
		_exit(0);
	return procs;
}

/*
 * One phase of cycles() for @uid, traced, after 300 ms of quiet: the
 * budgeted rounds per second of uids [@uid, @uid + @n), and in *@procs_s
 * the processes made per second.
 */
static double cycle_phase(uid_t uid, unsigned int n, double secs, int exit_each,
			  double *procs_s)
{
	double t0, t1;
	long procs;

	usleep(300000);
	trace_start();
	t0 = bench_now();
	procs = cycles(uid, secs, exit_each);
	t1 = bench_now();
	trace_stop();
	*procs_s = procs / (t1 - t0);
	return ran_per_s(uid, n, t0, t1);
}

static int cmd_comeback(double secs)
{
	long saved = read_long(SYSCTL_MAX_RATE);
	double stay, back, fresh, procs_s, unused;
	pid_t bg;

	if (saved < 0 || trace_start()) {
		printf("1..0 # SKIP needs %s and the trace event\n", SYSCTL_MAX_RATE);
		return 77;
	}
	tap_plan(4);
	write_long(SYSCTL_MAX_RATE, 1000);

	bg = background();
	stay = cycle_phase(3000, 1, secs, 0, &unused);
	back = cycle_phase(3001, 1, secs, 1, &procs_s);
	/* The control: what a fresh budget each time would give. */
	fresh = cycle_phase(4000, 100000, secs, 2, &unused);
	stop(bg);
	printf("# budgeted rounds per second: %.0f staying, %.0f coming back (%.0f processes a second)\n",
	       stay, back, procs_s);
	printf("RESULT label=comeback staying_per_s=%.0f back_per_s=%.0f new_uid_per_s=%.0f\n", stay,
	       back, fresh);
	tap_ok(stay > 0, "uid 3000, one process calling 7 ms of every 10: %.0f budgeted rounds/s", stay);
	tap_ok(back <= 1.2 * stay + 10,
	       "uid 3001, a new process for each 7 ms of every 10 (%.0f/s): %.0f budgeted rounds/s (at most 1.2 x %.0f + 10)",
	       procs_s, back, stay);
	tap_ok(fresh > 1.2 * stay + 10,
	       "control, a new uid for each 7 ms of every 10: %.0f budgeted rounds/s (more than 1.2 x %.0f + 10)",
	       fresh, stay);
	tap_ok(write_long(SYSCTL_MAX_RATE, saved) == 0, "restore max_rate to %ld", saved);
	return tap_failed ? 1 : 0;
}

/* --- herd --------------------------------------------------------------- */

static int *herd_go;	/* futex, MAP_SHARED: the attackers start */

static void *herd_thread(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(herd_go, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, herd_go, FUTEX_WAIT, 0, NULL, NULL, 0);
	for (;;)
		if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
			_exit(1);
	return NULL;
}

/* uid 5000 on @cpu (HERD_CPU for the herd): @n threads looping
 * SHARED_EXPEDITED, once all of them exist.  One vCPU: on the 2-core host,
 * more busy vCPUs wait for the host to run them, with
 * membarrier_shared_lock held. */
static pid_t herd_attackers(int n, int cpu)
{
	pid_t pid;

	*herd_go = 0;
	pid = fork_or_die();
	if (!pid) {
		pthread_attr_t attr;

		setrlimit(RLIMIT_NPROC, &(struct rlimit){ RLIM_INFINITY, RLIM_INFINITY });
		become(5000, cpu);
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		for (int i = 0; i < n; i++) {
			pthread_t th;

			if (pthread_create(&th, &attr, herd_thread, NULL)) {
				fprintf(stderr, "abuse herd: thread %d: cannot create\n", i);
				_exit(1);
			}
		}
		__atomic_store_n(herd_go, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, herd_go, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
		for (;;)
			pause();
	}
	return pid;
}

/* How many threads of @pid are in an uninterruptible (here: killable)
 * sleep, which for the attackers is a wait in membarrier(). */
static int waiting_threads(pid_t pid)
{
	char path[320], buf[256], *p;
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		int fd;
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = 0;
		p = strrchr(buf, ')');
		n += p && p[1] == ' ' && p[2] == 'D';
	}
	closedir(d);
	return n;
}

/*
 * One phase: @n attacker threads loop SHARED_EXPEDITED; the honest
 * caller (@uid, CPU 1) calls every 20 ms for @secs.  Of its calls that
 * ran a round themselves (round_ns > 0; budgeted or paced), the median
 * time spent beside the round and awake (duration_ns - round_ns - wait_ns) goes to
 * *@rest and the median whole call is returned; *@ran: how many there
 * were, *@per_round: the attackers' calls served per round in the phase,
 * *@waiting: the fewest attacker threads asleep in membarrier() at a
 * sample (one a second), *@all: the median of all its calls (us).
 */
static double herd_phase(int n, uid_t uid, double secs, double *rest, int *ran,
			 double *per_round, int *waiting, double *all)
{
	double whole[4096], beside[4096], every[4096], t0, t1;
	long joined = 0, rounds = 0;
	pid_t att, hon;
	int i, k = 0, m = 0;

	att = herd_attackers(n, HERD_CPU);
	while (!__atomic_load_n(herd_go, __ATOMIC_ACQUIRE))
		if (waitpid(att, NULL, WNOHANG) == att)
			return -1;
		else
			usleep(10000);
	usleep(300000);
	trace_start();
	t0 = bench_now();
	hon = fork_or_die();
	if (!hon) {
		become(uid, 1);
		while (bench_now() - t0 < secs) {
			if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
				_exit(1);
			usleep(20000);
		}
		_exit(0);
	}
	*waiting = n;
	while (waitpid(hon, NULL, WNOHANG) == 0) {
		int w = waiting_threads(att);

		if (w < *waiting)
			*waiting = w;
		usleep(1000000);
	}
	t1 = bench_now();
	trace_stop();
	stop(att);
	for (i = 0; i < ncalls; i++) {
		if (calls[i].t < t0 || calls[i].t > t1)
			continue;
		rounds += calls[i].round_ns > 0;
		joined += calls[i].uid == 5000 && !is(&calls[i], "ran");
		if (calls[i].uid == uid && m < 4096)
			every[m++] = calls[i].duration_ns / 1e3;
		if (calls[i].uid != uid || calls[i].round_ns <= 0 ||
		    k == 4096)
			continue;
		whole[k] = calls[i].duration_ns / 1e3;
		beside[k] = (calls[i].duration_ns - calls[i].round_ns -
			     (calls[i].wait_ns > 0 ? calls[i].wait_ns : 0)) / 1e3;
		k++;
	}
	*ran = k;
	*per_round = rounds ? (double)joined / rounds : 0;
	if (!k) {
		printf("# %d attacker threads: no call of the honest caller ran a round\n", n);
		return -1;
	}
	qsort(every, m, sizeof(every[0]), bench_cmp_double);
	*all = every[m / 2];
	qsort(whole, k, sizeof(whole[0]), bench_cmp_double);
	qsort(beside, k, sizeof(beside[0]), bench_cmp_double);
	*rest = beside[k / 2];
	printf("# %d attacker threads (at least %d asleep in membarrier(); %.0f of their calls served per round): the honest caller's %d calls %.0f us (median), %d of them ran a round, %.0f us (median; %.0f-%.0f), beside the round %.0f us (%.0f-%.0f)\n",
	       n, *waiting, *per_round, m, *all, k, whole[k / 2], whole[0], whole[k - 1], beside[k / 2], beside[0],
	       beside[k - 1]);
	return whole[k / 2];
}

static int cmd_herd(double secs, long rate)
{
	long saved = read_long(SYSCTL_MAX_RATE), threads = read_long("/proc/sys/kernel/threads-max");
	double few, many, few_rest, many_rest, few_per_round, many_per_round, few_all, many_all;
	int few_ran, many_ran, few_waiting, many_waiting;

	herd_go = mmap(NULL, sizeof(*herd_go), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 3 || herd_go == MAP_FAILED || saved < 0 ||
	    trace_start()) {
		printf("1..0 # SKIP needs 3 CPUs, %s and the trace event\n", SYSCTL_MAX_RATE);
		return 77;
	}
	tap_plan(6);
	if (threads < 2 * HERD_MANY)
		write_long("/proc/sys/kernel/threads-max", 2 * HERD_MANY);
	write_long(SYSCTL_MAX_RATE, rate);
	few = herd_phase(HERD_FEW, 1005, secs, &few_rest, &few_ran, &few_per_round,
			 &few_waiting, &few_all);
	many = herd_phase(HERD_MANY, 1006, secs, &many_rest, &many_ran, &many_per_round,
			  &many_waiting, &many_all);
	printf("RESULT label=herd few_us=%.0f many_us=%.0f few_beside_us=%.0f many_beside_us=%.0f few_all_us=%.0f many_all_us=%.0f many_waiting=%d many_served_per_round=%.0f\n",
	       few, many, few_rest, many_rest, few_all, many_all, many_waiting, many_per_round);
	tap_ok(few > 0 && few_ran >= 5, "%d attacker threads: the honest caller ran %d rounds",
	       HERD_FEW, few_ran);
	tap_ok(many > 0 && many_ran >= 5, "%d attacker threads: the honest caller ran %d rounds",
	       HERD_MANY, many_ran);
	tap_ok(many_per_round >= HERD_MANY / 2,
	       "%d attacker threads: the herd was there, %.0f of their calls served per round (at least %d; at least %d asleep in membarrier() at each sample)",
	       HERD_MANY, many_per_round, HERD_MANY / 2, many_waiting);
	tap_ok(few > 0 && many > 0 && many_rest <= 2 * few_rest,
	       "the honest caller's call beside its round with %d threads waiting %.0f us <= 2 x %.0f us with %d",
	       HERD_MANY, many_rest, few_rest, HERD_FEW);
	tap_ok(few > 0 && many > 0 && many_all <= 2 * few_all,
	       "all the honest caller's calls (joined, paced, ran), median with %d threads %.0f us <= 2 x %.0f us with %d",
	       HERD_MANY, many_all, few_all, HERD_FEW);
	if (threads > 0)
		write_long("/proc/sys/kernel/threads-max", threads);
	tap_ok(write_long(SYSCTL_MAX_RATE, saved) == 0, "restore max_rate to %ld", saved);
	return tap_failed ? 1 : 0;
}

/* --- oncpu -------------------------------------------------------------- */

#define ONCPU_ATTACKERS 20

/*
 * One phase: uids 6000-6019 on CPU 1, each looping SHARED_EXPEDITED if
 * @attack, a cheap system call if not; the honest caller (uid 1000, also
 * on CPU 1) calls every 10 ms for @secs.  Returns the share of its calls
 * that took more than 10 ms; *@n: how many calls, *@p99: their p99.
 */
static double oncpu_phase(int attack, double secs, int *n, double *p99)
{
	pid_t att[ONCPU_ATTACKERS];
	double v[4096];
	int i, slow = 0;

	for (i = 0; i < ONCPU_ATTACKERS; i++) {
		att[i] = fork_or_die();
		if (!att[i]) {
			become(6000 + i, 1);
			for (;;)
				if (attack ? mb(MEMBARRIER_CMD_SHARED_EXPEDITED) : syscall(SYS_getppid) < 0)
					_exit(1);
		}
	}
	usleep(300000);
	*n = honest_latencies(secs, v);
	for (i = 0; i < ONCPU_ATTACKERS; i++)
		stop(att[i]);
	if (*n < 1)
		return -1;
	for (i = 0; i < *n; i++)
		slow += v[i] > 0.010;
	*p99 = v[(int)(0.99 * (*n - 1) + 0.5)];
	printf("# %s: the honest caller's %d calls, %d over 10 ms (%.1f %%), median %.0f us, p99 %.0f us, worst %.0f us\n",
	       attack ? "20 attacker uids on its CPU" : "control, 20 uids looping getppid() on its CPU",
	       *n, slow, 100.0 * slow / *n, v[*n / 2] * 1e6, *p99 * 1e6, v[*n - 1] * 1e6);
	return (double)slow / *n;
}

static int cmd_oncpu(double secs)
{
	long saved = read_long(SYSCTL_MAX_RATE);
	double control, attack, p99_control, p99_attack;
	int n_control, n_attack;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || saved < 0) {
		printf("1..0 # SKIP needs 2 CPUs and %s\n", SYSCTL_MAX_RATE);
		return 77;
	}
	tap_plan(3);
	write_long(SYSCTL_MAX_RATE, 1000);
	control = oncpu_phase(0, secs, &n_control, &p99_control);
	attack = oncpu_phase(1, secs, &n_attack, &p99_attack);
	printf("RESULT label=oncpu control_slow_pct=%.1f attack_slow_pct=%.1f control_p99_us=%.0f attack_p99_us=%.0f\n",
	       100 * control, 100 * attack, p99_control * 1e6, p99_attack * 1e6);
	tap_ok(control >= 0 && n_control >= 20 && attack >= 0 && n_attack >= 20,
	       "the honest caller called %d times beside the control, %d beside the attack",
	       n_control, n_attack);
	tap_ok(control >= 0 && attack >= 0 && attack <= control + 0.02,
	       "attackers on its CPU: %.1f %% of the honest calls over 10 ms, at most the control's %.1f %% + 2",
	       100 * attack, 100 * control);
	tap_ok(write_long(SYSCTL_MAX_RATE, saved) == 0, "restore max_rate to %ld", saved);
	return tap_failed ? 1 : 0;
}

/* --- rtwait ------------------------------------------------------------- */

#define WQ_CPUMASK "/sys/devices/virtual/workqueue/cpumask"
#define RT_RUNTIME "/proc/sys/kernel/sched_rt_runtime_us"

struct rtwait {
	double worst[2];
	long calls[2];
	int stop;
};

static struct rtwait *rw;

/* SCHED_FIFO 50 on CPU @i: SHARED_EXPEDITED in a loop, its worst call. */
static pid_t rt_caller(int i)
{
	pid_t pid = fork_or_die();

	if (!pid) {
		bench_pin(i);
		rt_self(50);
		while (!__atomic_load_n(&rw->stop, __ATOMIC_ACQUIRE)) {
			double a = bench_now(), b;

			if (mb(MEMBARRIER_CMD_SHARED_EXPEDITED))
				_exit(1);
			b = bench_now();
			rw->calls[i]++;
			if (b - a > rw->worst[i])
				rw->worst[i] = b - a;
		}
		_exit(0);
	}
	return pid;
}

/*
 * Two SCHED_FIFO callers (priority 50, CPUs 0 and 1) loop
 * SHARED_EXPEDITED while SCHED_FIFO 40 spinners hold both CPUs whenever
 * they sleep, and 32 threads of uid 5000 (normal policy, on CPU 0) wait
 * in membarrier(); unbound kernel workers may run on CPUs 0 and 1 only
 * (/sys/devices/virtual/workqueue/cpumask), CPUs 2 and 3 stay idle, so
 * that no more vCPUs are busy than the host has CPUs.  A caller that
 * waits for the other's round must be woken by it, not by a kernel
 * worker of normal policy, which gets no CPU there.  RT throttling is off
 * for the phase (sched_rt_runtime_us -1; it would stop the callers
 * themselves for 50 ms a second, and give the worker that).  Every call
 * of the RT callers must end within 100 ms (the failure is a hang).
 */
static int cmd_rtwait(double secs)
{
	long saved = read_long(SYSCTL_MAX_RATE);
	long rt_runtime = read_long(RT_RUNTIME);
	char wq_mask[64] = "";
	pid_t att, hog[2], rc[2];
	int i, ok, fd;

	rw = mmap(NULL, sizeof(*rw), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	herd_go = mmap(NULL, sizeof(*herd_go), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 4 || rw == MAP_FAILED || herd_go == MAP_FAILED ||
	    saved < 0 || access(RT_RUNTIME, W_OK)) {
		printf("1..0 # SKIP needs 4 CPUs, %s and %s\n", SYSCTL_MAX_RATE, RT_RUNTIME);
		return 77;
	}
	fd = open(WQ_CPUMASK, O_RDONLY);
	if (fd >= 0) {
		ssize_t len = read(fd, wq_mask, sizeof(wq_mask) - 1);

		wq_mask[len > 0 ? len : 0] = 0;
		close(fd);
	}
	tap_plan(4);
	write_long(SYSCTL_MAX_RATE, 1000);
	tap_ok(write_str(WQ_CPUMASK, "3") == 0 && write_long(RT_RUNTIME, -1) == 0,
	       "unbound kernel workers on CPUs 0 and 1 only (%s), RT throttling off", WQ_CPUMASK);
	att = herd_attackers(32, 0);	/* of normal policy: forked first */
	while (!__atomic_load_n(herd_go, __ATOMIC_ACQUIRE))
		usleep(10000);
	usleep(200000);
	rt_self(60);	/* this process must run to end the phase */
	for (i = 0; i < 2; i++)
		rc[i] = rt_caller(i);
	usleep(100000);
	for (i = 0; i < 2; i++)
		hog[i] = spinner(0, i, 40);
	usleep(secs * 1e6);
	for (i = 0; i < 2; i++)
		stop(hog[i]);
	__atomic_store_n(&rw->stop, 1, __ATOMIC_RELEASE);
	ok = 1;
	for (i = 0; i < 2; i++) {
		int status;

		waitpid(rc[i], &status, 0);
		ok &= WIFEXITED(status) && !WEXITSTATUS(status);
	}
	stop(att);
	write_str(WQ_CPUMASK, wq_mask);
	write_long(RT_RUNTIME, rt_runtime);
	printf("RESULT label=rtwait worst_ms=%.2f calls=%ld\n",
	       1e3 * (rw->worst[0] > rw->worst[1] ? rw->worst[0] : rw->worst[1]),
	       rw->calls[0] + rw->calls[1]);
	tap_ok(ok && rw->calls[0] > 10 && rw->calls[1] > 10,
	       "two SCHED_FIFO callers made %ld and %ld calls under SCHED_FIFO spinners on their CPUs",
	       rw->calls[0], rw->calls[1]);
	tap_ok(rw->worst[0] <= 0.100 && rw->worst[1] <= 0.100,
	       "their worst calls %.2f and %.2f ms (at most 100): woken by the round's runner, not by a worker that cannot run",
	       rw->worst[0] * 1e3, rw->worst[1] * 1e3);
	tap_ok(write_long(SYSCTL_MAX_RATE, saved) == 0, "restore max_rate to %ld", saved);
	return tap_failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "slowround"))
		return cmd_slowround(atof(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "debt"))
		return cmd_debt();
	if (argc == 3 && !strcmp(argv[1], "comeback"))
		return cmd_comeback(atof(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "subuid"))
		return cmd_subuid(argv[0], atof(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "rtwait"))
		return cmd_rtwait(atof(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "oncpu"))
		return cmd_oncpu(atof(argv[2]));
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "herd"))
		return cmd_herd(atof(argv[2]), argc == 4 ? atol(argv[3]) : 10);
	if (argc == 3 && !strcmp(argv[1], "attack"))
		return cmd_attack(atof(argv[2]));
	fprintf(stderr, "usage: see the comment at the top of abuse.c\n");
	return 2;
}
