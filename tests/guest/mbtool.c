// SPDX-License-Identifier: MIT
/*
 * mbtool: guest-side checks for MEMBARRIER_CMD_SHARED_EXPEDITED.
 * Built static on the host against the patched kernel's headers and run
 * inside the QEMU guest by the tests/guest/ test scripts scripts. Prints TAP.
 *
 *   mbtool basic                 QUERY bit, EINVAL for bad flags, success
 *   mbtool enosys                membarrier() must fail with ENOSYS
 *   mbtool sysctl-perms          who may write the two sysctls
 *   mbtool nohz                  on a nohz_full boot: hidden and EINVAL
 *   mbtool ratelimit RATE SECS NSPIN
 *                                CAL IPIs on CPUs 1..NSPIN (running user
 *                                busy loops) under a SHARED_EXPEDITED loop
 *                                on CPU 0, with max_rate RATE (also with
 *                                rcu_expedited=1) and 0, and the counts
 *                                of kernel.membarrier_expedited_stats
 *   mbtool litmus MODE ROUNDS [MAXDELAY]
 *                                store-buffering litmus; MODE is
 *                                "membarrier" or "compiler" (control)
 *   mbtool latency CALLS NSPIN [GAP_US]
 *                                per-call latency of SHARED_EXPEDITED, with
 *                                user busy loops on CPUs 1..NSPIN, calls
 *                                GAP_US apart (default 2000)
 *
 * Exit status: 0 all ok, 1 a check failed, 77 skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "interrupts.h"
#include "sysctl.h"
#define MAX_CPUS 64

static int ntest, nfail;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++ntest);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		nfail++;
}

static int done_testing(void)
{
	return nfail ? 1 : 0;
}

static int membarrier(int cmd, unsigned int flags, int cpu_id)
{
	return syscall(__NR_membarrier, cmd, flags, cpu_id);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static int cmd_basic(void)
{
	int mask, ret;
	unsigned int bad[] = { MEMBARRIER_CMD_FLAG_CPU, 2, 1u << 31, ~0u };
	unsigned int i;

	printf("1..%zu\n", 3 + sizeof(bad) / sizeof(bad[0]));
	mask = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	ok(mask >= 0 && (mask & MEMBARRIER_CMD_SHARED_EXPEDITED) &&
	   MEMBARRIER_CMD_SHARED_EXPEDITED == (1 << 10),
	   "QUERY = %#x reports MEMBARRIER_CMD_SHARED_EXPEDITED (1 << 10)", mask);
	/* Bit 9 is upstream's GET_REGISTRATIONS (6.3): in 6.12, not in 6.1.
	 * QUERY reports it exactly when the kernel answers it. */
	errno = 0;
	ret = membarrier(1 << 9, 0, 0);
	ok(mask >= 0 && !!(mask & (1 << 9)) == (ret >= 0),
	   "QUERY reports bit 9 (GET_REGISTRATIONS) %s, and the kernel %s it (%d, errno %d)",
	   mask & (1 << 9) ? "set" : "clear", ret >= 0 ? "answers" : "refuses", ret, errno);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ret = membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, bad[i], 0);
		ok(ret == -1 && errno == EINVAL,
		   "SHARED_EXPEDITED flags=%#x -> %d errno %d (want EINVAL)", bad[i], ret, errno);
	}
	ret = membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0);
	ok(ret == 0, "SHARED_EXPEDITED flags=0, unregistered -> %d (errno %d)", ret,
	   ret ? errno : 0);
	return done_testing();
}

static int cmd_enosys(void)
{
	int ret;

	printf("1..2\n");
	errno = 0;
	ret = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	ok(ret == -1 && errno == ENOSYS, "QUERY -> %d errno %d (want ENOSYS)", ret, errno);
	errno = 0;
	ret = membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0);
	ok(ret == -1 && errno == ENOSYS, "SHARED_EXPEDITED -> %d errno %d (want ENOSYS)", ret,
	   errno);
	return done_testing();
}

/* On a nohz_full boot: hidden from QUERY and EINVAL, whatever the sysctls. */
static int cmd_nohz(void)
{
	int mask, mask2, ret, e, i;
	const long settings[][2] = { { 1, 1000 }, { 0, 1000 }, { 1, 0 } };
	long saved_exp = read_long(SYSCTL_EXPEDITED), saved_rate = read_long(SYSCTL_MAX_RATE);

	printf("1..%zu\n", 1 + 2 * sizeof(settings) / sizeof(settings[0]));
	for (i = 0; i < (int)(sizeof(settings) / sizeof(settings[0])); i++) {
		write_long(SYSCTL_EXPEDITED, settings[i][0]);
		write_long(SYSCTL_MAX_RATE, settings[i][1]);
		mask = membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
		ok(mask >= 0 && !(mask & MEMBARRIER_CMD_SHARED_EXPEDITED) &&
		   !(mask & MEMBARRIER_CMD_GLOBAL),
		   "expedited=%ld max_rate=%ld: QUERY = %#x hides SHARED_EXPEDITED and GLOBAL",
		   settings[i][0], settings[i][1], mask);
		errno = 0;
		ret = membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0);
		e = errno;
		ok(ret == -1 && e == EINVAL,
		   "expedited=%ld max_rate=%ld: SHARED_EXPEDITED -> %d errno %d (want EINVAL)",
		   settings[i][0], settings[i][1], ret, e);
	}
	write_long(SYSCTL_EXPEDITED, saved_exp);
	write_long(SYSCTL_MAX_RATE, saved_rate);
	mask2 = membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
	ok(mask2 == 0, "GLOBAL_EXPEDITED (upstream behaviour) still returns 0: %d", mask2);
	return done_testing();
}

static int drop_cap_sys_admin(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	return syscall(SYS_capset, &hdr, data);
}

/* Try to write @v to @path in a child as @uid (or as root without
 * CAP_SYS_ADMIN when uid == 0); returns the child's -errno, or 1 on
 * setup failure. */
static int write_as(const char *path, long v, uid_t uid)
{
	int status, fds[2], err = 1;
	pid_t pid;

	if (pipe(fds))
		return 1;
	pid = fork();
	if (!pid) {
		int r;

		close(fds[0]);
		if (uid ? (setgid(uid) || setuid(uid)) : drop_cap_sys_admin())
			r = 1;
		else
			r = write_long(path, v);
		if (write(fds[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &err, sizeof(err)) != sizeof(err))
		err = 1;
	close(fds[0]);
	waitpid(pid, &status, 0);
	return err;
}

static int cmd_sysctl_perms(void)
{
	const char *paths[] = { SYSCTL_EXPEDITED, SYSCTL_MAX_RATE };
	const long newv[] = { 0, 123 };
	int i, r;

	printf("1..8\n");
	for (i = 0; i < 2; i++) {
		long before = read_long(paths[i]);

		r = write_as(paths[i], newv[i], 65534);
		ok((r == -EACCES || r == -EPERM) && read_long(paths[i]) == before,
		   "uid 65534 writing %s: %s, value %ld -> %ld", paths[i], strerror(-r),
		   before, read_long(paths[i]));
		r = write_as(paths[i], newv[i], 0);
		ok(r == -EPERM && read_long(paths[i]) == before,
		   "root without CAP_SYS_ADMIN writing %s: %s, value %ld -> %ld", paths[i],
		   strerror(-r), before, read_long(paths[i]));
		r = write_long(paths[i], newv[i]);
		ok(r == 0 && read_long(paths[i]) == newv[i],
		   "root with CAP_SYS_ADMIN writes %ld to %s: %d, value now %ld", newv[i],
		   paths[i], r, read_long(paths[i]));
		r = write_long(paths[i], before);
		ok(r == 0 && read_long(paths[i]) == before, "root restores %s to %ld", paths[i],
		   before);
	}
	return done_testing();
}

static pid_t spawn_spinner(int cpu)
{
	pid_t pid = fork();

	if (!pid) {
		volatile unsigned long n = 0;

		pin(cpu);
		for (;;)
			n++;
	}
	return pid;
}

/*
 * Run for @secs on CPU 0: with @attack, a SHARED_EXPEDITED loop, otherwise
 * sleep. CPUs 1..ncpu-1 run user busy loops. Returns the max per-CPU CAL
 * delta on the other CPUs, and the number of calls in *calls.
 */
static long long cal_phase(int ncpu, double secs, int attack, long *calls, double *elapsed)
{
	long long before[MAX_CPUS], after[MAX_CPUS], max = 0;
	pid_t pids[MAX_CPUS];
	double t0, t;
	int i;

	for (i = 1; i < ncpu; i++)
		pids[i] = spawn_spinner(i);
	pin(0);
	usleep(200000);	/* let the spinners start */
	*calls = 0;
	read_cal_row(before, ncpu);
	t0 = now_s();
	if (attack) {
		do {
			if (membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0))
				break;
			(*calls)++;
		} while ((t = now_s()) - t0 < secs);
	} else {
		usleep((useconds_t)(secs * 1e6));
	}
	t = now_s();
	read_cal_row(after, ncpu);
	*elapsed = t - t0;
	for (i = 1; i < ncpu; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
		if (after[i] - before[i] > max)
			max = after[i] - before[i];
	}
	return max;
}

/*
 * One attacker phase with max_rate = @rate: the busiest other CPU's CAL
 * delta must stay within R * t * 1.1 + baseline + 10, and the statistics
 * must count every call as served by an IPI round (run, joined or paced),
 * none by a grace period.
 */
static void limited_phase(int ncpu, double secs, int rate, long long base, const char *what)
{
	struct membarrier_stats st0, st1, d;
	long long cal, bound;
	long calls;
	double el;
	int have_stats = !read_membarrier_stats(&st0);

	cal = cal_phase(ncpu, secs, 1, &calls, &el);
	bound = (long long)(rate * el * 1.1) + base + 10;
	printf("# max_rate=%d%s: %ld calls (%.0f/s), CAL delta %lld in %.2f s = %.0f IPI/s per CPU\n",
	       rate, what, calls, calls / el, cal, el, cal / el);
	ok(cal <= bound, "IPIs per CPU with max_rate=%d%s: %lld <= %lld (R*t*1.1 + baseline + 10)",
	   rate, what, cal, bound);
	if (have_stats && !read_membarrier_stats(&st1)) {
		d = membarrier_stats_sub(&st1, &st0);
		printf("# stats%s: ran %llu, joined %llu, paced %llu, grace_period %llu\n", what,
		       d.ran, d.joined, d.paced, d.grace_period);
		ok(d.ran + d.joined + d.paced == (unsigned long long)calls && !d.grace_period,
		   "stats%s: ran %llu + joined %llu + paced %llu = %ld calls, 0 grace periods", what,
		   d.ran, d.joined, d.paced, calls);
	} else {
		ok(0, "read %s", SYSCTL_STATS);
	}
}

static int cmd_ratelimit(int rate, double secs, int nspin)
{
	int ncpu = nspin + 1;
	long long base, unlimited;
	long calls;
	double el_base, el_unl;
	long saved = read_long(SYSCTL_MAX_RATE);
	long saved_exp = read_long(RCU_EXPEDITED);
	long long cal[MAX_CPUS];

	printf("1..8\n");
	if (ncpu < 2 || ncpu > sysconf(_SC_NPROCESSORS_ONLN) || ncpu > MAX_CPUS ||
	    read_cal_row(cal, ncpu) || saved < 0 || saved_exp < 0) {
		printf("# need 2..%d CPUs, a CAL row in /proc/interrupts, %s and %s\n", MAX_CPUS,
		       SYSCTL_MAX_RATE, RCU_EXPEDITED);
		return 77;
	}
	printf("# %d CPUs, rate limit %d/s, %.1f s per phase; CAL = max over CPUs 1..%d\n",
	       ncpu, rate, secs, ncpu - 1);

	base = cal_phase(ncpu, secs, 0, &calls, &el_base);
	printf("# baseline (no attacker): CAL delta %lld in %.2f s\n", base, el_base);

	ok(write_long(SYSCTL_MAX_RATE, rate) == 0, "set max_rate to %d", rate);
	limited_phase(ncpu, secs, rate, base, "");
	/*
	 * With rcu_expedited, synchronize_rcu() is expedited and IPIs every
	 * CPU running user code: the fallback must not use it.
	 */
	write_long(RCU_EXPEDITED, 1);
	limited_phase(ncpu, secs, rate, base, ", rcu_expedited=1");
	write_long(RCU_EXPEDITED, saved_exp);

	write_long(SYSCTL_MAX_RATE, 0);
	unlimited = cal_phase(ncpu, secs, 1, &calls, &el_unl);
	printf("# max_rate=0: %ld calls (%.0f/s), CAL delta %lld in %.2f s = %.0f IPI/s per CPU\n",
	       calls, calls / el_unl, unlimited, el_unl, unlimited / el_unl);
	ok(unlimited > 2 * (rate * el_unl + base),
	   "IPIs per CPU unlimited: %lld > 2 * (R*t + baseline) = %.0f", unlimited,
	   2 * (rate * el_unl + base));
	ok(write_long(SYSCTL_MAX_RATE, saved) == 0, "restore max_rate to %ld", saved);
	return done_testing();
}

/* Store-buffering litmus. */
static volatile int x, y, r1, r2;
static volatile unsigned long start_round, done_count;
static int use_membarrier;
static long rounds;
static unsigned int max_delay = 16;

#define barrier() __asm__ __volatile__("" ::: "memory")

static void *thread_b(void *arg)
{
	long i;

	(void)arg;
	pin(1);
	for (i = 1; i <= rounds; i++) {
		while (start_round != (unsigned long)i)
			;
		y = 1;
		barrier();
		r1 = x;
		__atomic_fetch_add(&done_count, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/*
 * The main thread is both thread A (x = 1; membarrier; r2 = y) and the
 * coordinator: it resets the variables, waits until thread B has finished
 * the previous round, then releases the round; B spins on start_round, so
 * both leave the rendezvous together. Only two threads spin, so that each
 * has a host CPU under TCG on a 2-core host.
 */
static int cmd_litmus(const char *mode, long n)
{
	pthread_t b;
	long i, forbidden = 0;
	double t0, el;

	use_membarrier = !strcmp(mode, "membarrier");
	rounds = n;
	printf("1..1\n");
	pin(0);
	pthread_create(&b, NULL, thread_b, NULL);
	t0 = now_s();
	for (i = 1; i <= n; i++) {
		/* B sees the start some time after A: a random delay in A makes
		 * both sides overlap in some rounds. */
		unsigned int d = (unsigned int)((i * 2654435761u) >> 7) % max_delay;
		volatile unsigned int k;

		x = 0;
		y = 0;
		r1 = -1;
		r2 = -1;
		__atomic_store_n(&start_round, i, __ATOMIC_SEQ_CST);
		for (k = 0; k < d; k++)
			;
		x = 1;
		if (use_membarrier) {
			if (membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0))
				abort();
		} else {
			barrier();
		}
		r2 = y;
		while (__atomic_load_n(&done_count, __ATOMIC_SEQ_CST) != (unsigned long)i)
			;
		if (r1 == 0 && r2 == 0)
			forbidden++;
	}
	el = now_s() - t0;
	pthread_join(b, NULL);
	printf("# litmus %s: %ld rounds in %.2f s, %ld with r1 == 0 && r2 == 0\n", mode, n, el,
	       forbidden);
	if (use_membarrier)
		ok(forbidden == 0, "SB litmus with SHARED_EXPEDITED: %ld/%ld forbidden outcomes",
		   forbidden, n);
	else
		ok(forbidden > 0, "SB litmus control (compiler barrier only): %ld/%ld forbidden outcomes",
		   forbidden, n);
	return done_testing();
}

static int cmp_double(const void *a, const void *b)
{
	double d = *(const double *)a - *(const double *)b;

	return d < 0 ? -1 : d > 0;
}

/* Per-call latency, @gap_us apart, with user busy loops on CPUs 1..nspin
 * so that IPIs are sent. */
static int cmd_latency(long n, int nspin, long gap_us)
{
	int ncpu = nspin + 1, i;
	pid_t pids[MAX_CPUS];
	double *lat = calloc(n, sizeof(*lat)), sum = 0;
	long k;

	if (!lat || n < 1 || ncpu > sysconf(_SC_NPROCESSORS_ONLN) || ncpu > MAX_CPUS)
		return 1;
	printf("1..1\n");
	for (i = 1; i < ncpu; i++)
		pids[i] = spawn_spinner(i);
	pin(0);
	usleep(200000);
	for (k = 0; k < n; k++) {
		double t0 = now_s();

		if (membarrier(MEMBARRIER_CMD_SHARED_EXPEDITED, 0, 0))
			break;
		lat[k] = now_s() - t0;
		sum += lat[k];
		if (gap_us)
			usleep(gap_us);
	}
	for (i = 1; i < ncpu; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	ok(k == n, "%ld SHARED_EXPEDITED calls succeeded", k);
	if (k == n) {
		qsort(lat, n, sizeof(*lat), cmp_double);
		printf("# latency (membarrier_expedited=%ld, max_rate=%ld, %d busy CPUs, %ld us apart): median %.1f us, mean %.1f us, max %.1f us\n",
		       read_long(SYSCTL_EXPEDITED), read_long(SYSCTL_MAX_RATE), nspin, gap_us,
		       lat[n / 2] * 1e6, sum / n * 1e6, lat[n - 1] * 1e6);
		printf("# LATENCY_MEDIAN_US %.1f\n", lat[n / 2] * 1e6);
		printf("# LATENCY_MIN_US %.1f\n", lat[0] * 1e6);
	}
	free(lat);
	return done_testing();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "basic"))
		return cmd_basic();
	if (argc >= 2 && !strcmp(argv[1], "enosys"))
		return cmd_enosys();
	if (argc >= 2 && !strcmp(argv[1], "nohz"))
		return cmd_nohz();
	if (argc >= 2 && !strcmp(argv[1], "sysctl-perms"))
		return cmd_sysctl_perms();
	if (argc >= 5 && !strcmp(argv[1], "ratelimit"))
		return cmd_ratelimit(atoi(argv[2]), atof(argv[3]), atoi(argv[4]));
	if (argc >= 4 && !strcmp(argv[1], "litmus")) {
		if (argc >= 5)
			max_delay = atoi(argv[4]) > 0 ? atoi(argv[4]) : 1;
		return cmd_litmus(argv[2], atol(argv[3]));
	}
	if (argc >= 4 && !strcmp(argv[1], "latency"))
		return cmd_latency(atol(argv[2]), atoi(argv[3]), argc >= 5 ? atol(argv[4]) : 2000);
	fprintf(stderr, "usage: see the comment at the top of mbtool.c\n");
	return 2;
}
