// SPDX-License-Identifier: MIT
/*
 * stress: membarrier(2) under everything at once, for the debug kernel
 * (tests/guest/debug-stress.test; the kernel's own checkers find the bugs,
 * this program only makes them happen and checks what the calls return).
 *
 *   stress CALLS
 *
 * As root in the guest.  Two worker processes, under uids 1000 and 1001,
 * with WORKERS threads each, make CALLS membarrier() calls in total: every
 * command, valid or not, with random flags and cpu_id, weighted so that the
 * slow ones (GLOBAL and SHARED_EXPEDITED, which wait for an RCU grace
 * period or a paced round) stay rare.  Meanwhile, in this process:
 *   - a churn thread forks children that register for the private and
 *     global expedited commands, call them, then exit or exec (which drops
 *     the registrations), and reaps them;
 *   - a hotplug thread takes CPUs 1..N-1 offline and online again;
 *   - a knob thread sets kernel.membarrier_expedited (0, 1, 2),
 *     kernel.membarrier_expedited_max_rate and /sys/kernel/rcu_expedited
 *     to random values.
 * And a herd: a third process, uid 1002, with HERD threads looping
 * SHARED_EXPEDITED alone, so that more than 8 callers wait for a round
 * (the kernel then hands the wake-ups to a kworker), one of them
 * SCHED_FIFO (RLIMIT_RTPRIO 1: real-time callers wait apart and are woken
 * by the round's runner), until the workers are done.
 * Checks: QUERY gives the same mask in every call (membarrier(2): the
 * answer does not change until reboot), SHARED_EXPEDITED with flags 0
 * always returns 0, a command outside the mask or with a bad flag fails
 * with EINVAL, and no call fails with anything but EINVAL or EPERM.
 * Prints TAP; restores the knobs and brings every CPU online at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sysctl.h"

#define WORKERS 4	/* threads per worker process */
#define HERD 16		/* threads of the herd process */
_Static_assert(WORKERS <= 16 && HERD <= 16, "thread_process() makes at most 16 threads");

struct counts {
	long calls;		/* made so far, all workers */
	long target;
	long bad;		/* unexpected results */
	long per_cmd[32];	/* calls per command bit (valid flags) */
	long eperm, einval, ok;
	long herd_calls, herd_rt_calls;
	char first_bad[256];
};

static struct counts *shm;
static int query_mask;
static volatile int stop;

static long mb(int cmd, unsigned int flags, int cpu_id)
{
	return syscall(__NR_membarrier, cmd, flags, cpu_id);
}

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bad(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&shm->bad, 1, __ATOMIC_RELAXED) == 0) {
		va_start(ap, fmt);
		vsnprintf(shm->first_bad, sizeof(shm->first_bad), fmt, ap);
		va_end(ap);
	}
}

static unsigned int rnd(unsigned int *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* One random call; checks what can be checked from its arguments alone. */
static void one_call(unsigned int *seed)
{
	unsigned int r = rnd(seed), w = r % 1000;
	unsigned int flags = 0;
	int cmd, cpu_id = 0, bit;
	long ret;

	/*
	 * GLOBAL (with membarrier_expedited 0 or 1) and SHARED_EXPEDITED with
	 * membarrier_expedited = 0 wait for a grace period (tens of ms under
	 * TCG), SHARED_EXPEDITED beyond its budget for a paced round (up to
	 * 1.3 s at max_rate = 1, until the knob thread changes it):
	 * 0.02% and 0.1% of the calls.  The other commands send IPIs
	 * once registered (each waits for the host to run the target vCPUs
	 * under TCG): 6%.  The rest fail fast, which is what makes 10^6
	 * calls affordable in a debug kernel under TCG.
	 */
	if (w < 1 && rnd(seed) % 5 == 0)
		cmd = MEMBARRIER_CMD_GLOBAL;
	else if (w < 2)
		cmd = 1 << 10;					/* SHARED_EXPEDITED */
	else if (w < 60)
		cmd = 1 << (rnd(seed) % 9 + 1);			/* GLOBAL_EXPEDITED..bit 9 */
	else if (w < 160)
		cmd = MEMBARRIER_CMD_QUERY;
	else if (w < 500)
		cmd = (int)(rnd(seed) | 0x800);			/* anything, never valid */
	else
		cmd = 1 << (rnd(seed) % 21 + 11);		/* unknown bits */
	if (rnd(seed) % 8 == 0)
		flags = rnd(seed) % 4 ? MEMBARRIER_CMD_FLAG_CPU : rnd(seed);
	if (rnd(seed) % 2)
		cpu_id = (int)(rnd(seed) % 8) - 2;		/* -2..5: some offline, some invalid */
	if (rnd(seed) % 16 == 0)
		cpu_id = (int)rnd(seed);

	ret = mb(cmd, flags, cpu_id);
	__atomic_fetch_add(&shm->calls, 1, __ATOMIC_RELAXED);
	bit = cmd > 0 && !(cmd & (cmd - 1)) ? __builtin_ctz((unsigned int)cmd) : -1;
	if (ret == 0) {
		__atomic_fetch_add(&shm->ok, 1, __ATOMIC_RELAXED);
		if (bit >= 0 && flags == 0)
			__atomic_fetch_add(&shm->per_cmd[bit], 1, __ATOMIC_RELAXED);
	} else if (errno == EPERM) {
		__atomic_fetch_add(&shm->eperm, 1, __ATOMIC_RELAXED);
	} else if (errno == EINVAL) {
		__atomic_fetch_add(&shm->einval, 1, __ATOMIC_RELAXED);
	}

	if (cmd == MEMBARRIER_CMD_QUERY && flags == 0 && ret != query_mask)
		bad("QUERY returned %ld, %#x before", ret, query_mask);
	else if (cmd == (1 << 10) && flags == 0 && ret != 0)
		bad("SHARED_EXPEDITED returned %ld (%s)", ret, strerror(errno));
	else if (cmd != MEMBARRIER_CMD_QUERY && (bit < 0 || !(query_mask & cmd)) &&
		 !(ret == -1 && errno == EINVAL))
		bad("cmd %#x (not in %#x) flags %#x returned %ld (%s)", cmd, query_mask, flags,
		    ret, strerror(errno));
	else if (flags && !(cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ &&
			    flags == MEMBARRIER_CMD_FLAG_CPU) && !(ret == -1 && errno == EINVAL))
		bad("cmd %#x with flags %#x returned %ld (%s)", cmd, flags, ret, strerror(errno));
	else if (ret == -1 && errno != EINVAL && errno != EPERM)
		bad("cmd %#x flags %#x cpu %d: %s", cmd, flags, cpu_id, strerror(errno));
}

static void *worker(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg * 2654435761u + 1;

	while (__atomic_load_n(&shm->calls, __ATOMIC_RELAXED) < shm->target)
		one_call(&seed);
	return NULL;
}

/* A herd thread: SHARED_EXPEDITED until the workers are done, half a
 * millisecond between calls (the first thread: SCHED_FIFO 1, a
 * millisecond). */
static void *herd_thread(void *arg)
{
	int rt = (uintptr_t)arg % 16 == 0;

	if (rt) {
		struct sched_param sp = { .sched_priority = 1 };

		if (sched_setscheduler(0, SCHED_FIFO, &sp))
			bad("herd: SCHED_FIFO 1 with RLIMIT_RTPRIO 1: %s", strerror(errno));
	}
	while (__atomic_load_n(&shm->calls, __ATOMIC_RELAXED) < shm->target) {
		if (mb(1 << 10, 0, 0))
			bad("herd: SHARED_EXPEDITED returned -1 (%s)", strerror(errno));
		__atomic_fetch_add(rt ? &shm->herd_rt_calls : &shm->herd_calls, 1,
				   __ATOMIC_RELAXED);
		usleep(rt ? 1000 : 500);
	}
	return NULL;
}

/* A process of @uid (RLIMIT_RTPRIO 1) with @n threads of @fn, the
 * argument of thread i uid * 16 + i; exits when they have. */
static pid_t thread_process(uid_t uid, int n, void *(*fn)(void *))
{
	pid_t pid = fork();

	if (pid == 0) {
		struct rlimit rl = { 1, 1 };
		pthread_t th[16];

		if (setrlimit(RLIMIT_RTPRIO, &rl) || setgid(uid) || setuid(uid)) {
			bad("setrlimit/setuid(%d): %s", uid, strerror(errno));
			_exit(1);
		}
		for (int i = 0; i < n; i++)
			pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)(uid * 16 + i));
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		_exit(0);
	}
	return pid;
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static long churned, hotplugs, knob_flips;

/* Children that register, call, and exit or exec (registrations dropped). */
static void *churn(void *arg)
{
	unsigned int seed = 77;

	(void)arg;
	while (!stop) {
		pid_t pid = fork();

		if (pid == 0) {
			static const int reg[] = {
				MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
				MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED,
				MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE,
				MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ,
			};
			int r = (int)(rnd(&seed) ^ (unsigned int)getpid());

			mb(reg[(unsigned int)r % 4], 0, 0);
			mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
			mb(MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
			if (r & 16)
				execl("/bin/true", "true", (char *)NULL);
			_exit(0);
		}
		if (pid > 0) {
			waitpid(pid, NULL, 0);
			churned++;
		}
		rnd(&seed);
	}
	return NULL;
}

static int ncpus;

static void cpu_online(int cpu, int on)
{
	char path[64];

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
	write_long(path, on);
}

static void *hotplug(void *arg)
{
	unsigned int seed = 99;

	(void)arg;
	while (!stop) {
		int cpu = 1 + (int)(rnd(&seed) % (unsigned int)(ncpus - 1));

		/* Each change stops every CPU (stop_machine()), which under TCG
		 * takes long, and a debug kernel longer: two cycles a second. */
		cpu_online(cpu, 0);
		nap_ms(20 + (int)(rnd(&seed) % 50));
		cpu_online(cpu, 1);
		hotplugs++;
		nap_ms(300 + (int)(rnd(&seed) % 300));
	}
	return NULL;
}

static void *knobs(void *arg)
{
	static const long rates[] = { 0, 1, 50, 1000, 1000000 };
	unsigned int seed = 123;

	(void)arg;
	while (!stop) {
		switch (rnd(&seed) % 3) {
		case 0:
			write_long(SYSCTL_EXPEDITED, rnd(&seed) % 3);
			break;
		case 1:
			write_long(SYSCTL_MAX_RATE, rates[rnd(&seed) % 5]);
			break;
		default:
			write_long(RCU_EXPEDITED, rnd(&seed) % 2);
			break;
		}
		knob_flips++;
		nap_ms(5 + (int)(rnd(&seed) % 20));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const knob[] = { SYSCTL_EXPEDITED, SYSCTL_MAX_RATE, RCU_EXPEDITED };
	long saved[3];
	pthread_t tc, th, tk;
	pid_t w1, w2, hp;
	int st1, st2, sth, failed = 0;
	time_t t0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: stress CALLS\n");
		return 2;
	}
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		return 1;
	shm->target = atol(argv[1]);
	ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	query_mask = (int)mb(MEMBARRIER_CMD_QUERY, 0, 0);
	printf("1..4\n# %d CPUs, QUERY %#x, %ld calls from 2 x %d threads\n", ncpus, query_mask,
	       shm->target, WORKERS);
	if (query_mask < 0 || ncpus < 2) {
		printf("not ok 1 - QUERY works and there are 2 CPUs or more\n");
		return 1;
	}
	for (int i = 0; i < 3; i++)
		saved[i] = read_long(knob[i]);

	t0 = time(NULL);
	/* The workers first: fork() before this process has threads. */
	w1 = thread_process(1000, WORKERS, worker);
	w2 = thread_process(1001, WORKERS, worker);
	hp = thread_process(1002, HERD, herd_thread);
	pthread_create(&tc, NULL, churn, NULL);
	pthread_create(&th, NULL, hotplug, NULL);
	pthread_create(&tk, NULL, knobs, NULL);
	waitpid(w1, &st1, 0);
	waitpid(w2, &st2, 0);
	waitpid(hp, &sth, 0);
	stop = 1;
	pthread_join(tc, NULL);
	pthread_join(th, NULL);
	pthread_join(tk, NULL);
	for (int cpu = 1; cpu < ncpus; cpu++)
		cpu_online(cpu, 1);
	for (int i = 0; i < 3; i++)
		if (saved[i] >= 0)
			write_long(knob[i], saved[i]);

	printf("# %ld calls in %ld s: %ld returned 0, %ld EPERM, %ld EINVAL; %ld children, %ld hotplug cycles, %ld knob changes\n",
	       shm->calls, (long)(time(NULL) - t0), shm->ok, shm->eperm, shm->einval, churned,
	       hotplugs, knob_flips);
	printf("# successful calls with flags 0 per command bit:");
	for (int b = 0; b < 11; b++)
		printf(" %d:%ld", b, shm->per_cmd[b]);
	printf("\n");
	if (!(WIFEXITED(st1) && WEXITSTATUS(st1) == 0 && WIFEXITED(st2) && WEXITSTATUS(st2) == 0))
		failed = 1;
	printf("# the herd (uid 1002, %d threads): %ld calls, %ld of them SCHED_FIFO\n", HERD,
	       shm->herd_calls, shm->herd_rt_calls);
	if (!(WIFEXITED(sth) && WEXITSTATUS(sth) == 0) || !shm->herd_calls || !shm->herd_rt_calls)
		failed = 1;
	printf("%sok 1 - the worker processes (uids 1000, 1001) and the herd (1002) exited 0 (%#x, %#x, %#x), the herd called\n",
	       failed ? "not " : "", st1, st2, sth);
	printf("%sok 2 - %ld calls made (>= %ld)\n", shm->calls >= shm->target ? "" : "not ",
	       shm->calls, shm->target);
	printf("%sok 3 - every result as documented (%ld unexpected%s%s)\n", shm->bad ? "not " : "",
	       shm->bad, shm->bad ? "; first: " : "", shm->first_bad);
	printf("%sok 4 - the churn, hotplug and knob threads ran (%ld, %ld, %ld)\n",
	       churned && hotplugs && knob_flips ? "" : "not ", churned, hotplugs, knob_flips);
	return failed || shm->bad || shm->calls < shm->target || !churned || !hotplugs ||
	       !knob_flips;
}
