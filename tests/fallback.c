/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fallback paths, on this kernel: each scenario re-executes this test
 * under a seccomp filter that makes membarrier(2) fail (ENOSYS as without
 * CONFIG_MEMBARRIER, EPERM as in a sandbox) or kill the process (where
 * only LIBMEMBARRIER_HEAVY can save it), so the library probes afresh.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"

static int failures;


static volatile int stop;

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
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * Heavy barriers per calling thread: FALLBACK_HEAVY_CALLS, default 100 (the
 * guest tests take fewer: there a barrier of the signal mechanism among
 * these nine threads takes milliseconds).  Four callers beside busy
 * threads on two CPUs is the signal mechanism's worst case for shared
 * calls (membarrier(3), CAVEATS): 200 each took 16 s where unshared calls
 * took 5.
 */
static int heavy_calls = 100;

static void *heavy_caller(void *arg)
{
	for (int i = 0; i < heavy_calls; i++)
		if (membarrier_heavy() != 0)
			__atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Heavy barriers with other threads running, sleeping, coming and going. */
static void exercise_heavy(int emulated)
{
	pthread_t t[8];
	int errors = 0, n = 0;

	stop = 0;
	pthread_create(&t[n++], NULL, spinner, NULL);
	pthread_create(&t[n++], NULL, spinner, NULL);
	pthread_create(&t[n++], NULL, sleeper, NULL);
	pthread_create(&t[n++], NULL, test_churner, (void *)&stop);
	for (int i = 0; i < 3; i++)
		pthread_create(&t[n++], NULL, heavy_caller, &errors);
	heavy_caller(&errors);
	if (emulated)
		CHECK(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0,
		      "emulated PRIVATE_EXPEDITED with threads: %s", strerror(errno));
	for (int i = 4; i < n; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK(errors == 0, "%d concurrent heavy barriers failed", errors);
}

static int child(const char *scenario)
{
	struct membarrier_strategy st;
	int want_errno = strcmp(scenario, "enosys") == 0 ? ENOSYS :
			 strcmp(scenario, "eperm") == 0 ? EPERM : 0;
	int fence = strcmp(scenario, "fence") == 0;
	int emulated = MEMBARRIER_CMD_PRIVATE_EXPEDITED |
		       MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED;

#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
	/* The signal handler serialises the core here (membarrier(3)). */
	if (want_errno)
		emulated |= MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE |
			    MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE;
#endif
	alarm(60);	/* a hang is a failure */
	CHECK(membarrier_get_strategy(&st, sizeof(st)) == 0, "strategy");
	CHECK(st.kernel_commands == 0, "kernel mask 0x%x", (unsigned int)st.kernel_commands);
	CHECK(st.kernel_errno == want_errno, "kernel errno %d, want %d", st.kernel_errno,
	      want_errno);
	CHECK(st.probe_skipped == (want_errno == 0), "probe_skipped %d", st.probe_skipped);
	CHECK(st.heavy == (fence ? MEMBARRIER_MECHANISM_FENCE : MEMBARRIER_MECHANISM_SIGNAL),
	      "heavy is %s", membarrier_mechanism_name(st.heavy));
	CHECK(st.light_is_fence == fence && libmembarrier_light_fence == fence,
	      "light is %s", st.light_is_fence ? "a fence" : "a compiler barrier");
	CHECK(st.emulated_commands == (fence ? 0 : emulated),
	      "emulated 0x%x", (unsigned int)st.emulated_commands);
	if (!fence)
		CHECK(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 1, 0) == -1 && errno == EINVAL,
		      "emulated PRIVATE_EXPEDITED with flags 1 is EINVAL");
	if (want_errno) {
		/* As the bare system call: the kernel's errno, not EINVAL. */
		CHECK(membarrier(MEMBARRIER_CMD_QUERY, 0, 0) == emulated, "QUERY");
		CHECK(membarrier(MEMBARRIER_CMD_GLOBAL, 0, 0) == -1 && errno == want_errno,
		      "GLOBAL: %s", strerror(errno));
		CHECK(membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0) == -1 &&
		      errno == want_errno, "GET_REGISTRATIONS: %s", strerror(errno));
		CHECK(membarrier(-1, 0, 0) == -1 && errno == want_errno,
		      "cmd -1: %s", strerror(errno));
		CHECK(membarrier(MEMBARRIER_CMD_QUERY, 1, 0) == -1 && errno == want_errno,
		      "QUERY with flags 1: %s", strerror(errno));
	}
	/*
	 * With LIBMEMBARRIER_HEAVY=fence nothing is emulated: commands go to
	 * the kernel, whose filter kills here, so they are not tried.
	 */
	if (!fence) {
		CHECK(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0,
		      "emulated REGISTER_PRIVATE_EXPEDITED");
		CHECK(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0,
		      "emulated PRIVATE_EXPEDITED alone");
	}
	if (emulated & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) {
		CHECK(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0,
		      "emulated REGISTER_PRIVATE_EXPEDITED_SYNC_CORE");
		CHECK(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0,
		      "emulated PRIVATE_EXPEDITED_SYNC_CORE");
		CHECK(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 1, 0) == -1 &&
		      errno == EINVAL, "emulated SYNC_CORE with flags 1 is EINVAL");
	}
	CHECK(membarrier_heavy() == 0, "heavy alone");
	exercise_heavy(!fence);

	if (!fence) {
		/*
		 * The application takes the library's signal: heavy moves to
		 * another free one, and the application's disposition stays.
		 */
		struct membarrier_strategy after;
		struct sigaction sa;

		signal(st.signal, SIG_IGN);
		CHECK(membarrier_heavy() == 0, "heavy with the signal taken: %s", strerror(errno));
		CHECK(membarrier_get_strategy(&after, sizeof(after)) == 0 &&
		      after.signal > 0 && after.signal != st.signal,
		      "moved from signal %d to %d", st.signal, after.signal);
		CHECK(sigaction(st.signal, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN,
		      "the application's SIG_IGN stays");
		exercise_heavy(1);
	}
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

struct scenario {
	const char *name;
	unsigned int action;
	const char *env;
	const char *what;
};

static const struct scenario scenarios[] = {
	{ "enosys", SECCOMP_RET_ERRNO | ENOSYS, NULL,
	  "membarrier(2) answers ENOSYS (no CONFIG_MEMBARRIER): signal mechanism" },
	{ "eperm", SECCOMP_RET_ERRNO | EPERM, NULL,
	  "membarrier(2) answers EPERM (a sandbox): signal mechanism" },
	{ "skip", SECCOMP_RET_KILL_PROCESS, "signal",
	  "membarrier(2) kills: LIBMEMBARRIER_HEAVY=signal never calls it" },
	{ "fence", SECCOMP_RET_KILL_PROCESS, "fence",
	  "membarrier(2) kills: LIBMEMBARRIER_HEAVY=fence, light becomes a fence" },
};
#define NSCEN ((int)(sizeof(scenarios) / sizeof(scenarios[0])))

int main(int argc, char **argv)
{
	int seccomp;

	if (getenv("FALLBACK_HEAVY_CALLS") != NULL && atoi(getenv("FALLBACK_HEAVY_CALLS")) > 0)
		heavy_calls = atoi(getenv("FALLBACK_HEAVY_CALLS"));
	if (argc == 3 && strcmp(argv[1], "--child") == 0)
		return child(argv[2]);

	/*
	 * Under an emulator that refuses seccomp filters, the scenarios that
	 * set LIBMEMBARRIER_HEAVY run without the filter (the library must
	 * not probe either way), the others are skipped, saying why.
	 */
	seccomp = test_seccomp_works();
	if (!seccomp && test_emulator() == NULL)
		tap_bail("seccomp filters do not work on this host");
	tap_plan(NSCEN + 1);
	for (int i = 0; i < NSCEN; i++) {
		const struct scenario *s = &scenarios[i];
		int status;
		pid_t pid;

		if (!seccomp && s->env == NULL) {
			tap_ok(1, "%s # SKIP %s", s->what, TEST_NO_SECCOMP);
			continue;
		}
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			if (s->env)
				setenv("LIBMEMBARRIER_HEAVY", s->env, 1);
			else
				unsetenv("LIBMEMBARRIER_HEAVY");
			if (seccomp && deny_membarrier(s->action) != 0)
				_exit(98);
			test_reexec(argv[0], "--child", s->name);
			_exit(97);
		}
		waitpid(pid, &status, 0);
		tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s%s (status 0x%x)",
		       s->what, seccomp ? "" : " (no filter: " TEST_NO_SECCOMP ")",
		       (unsigned int)status);
	}

	/* The control: without LIBMEMBARRIER_HEAVY the killing filter does kill. */
	if (!seccomp) {
		tap_ok(1, "control: a probing library is killed by that filter # SKIP %s",
		       TEST_NO_SECCOMP);
	} else {
		int status;
		pid_t pid = fork();

		if (pid == 0) {
			unsetenv("LIBMEMBARRIER_HEAVY");
			if (deny_membarrier(SECCOMP_RET_KILL_PROCESS) != 0)
				_exit(98);
			test_reexec(argv[0], "--child", "skip");
			_exit(97);
		}
		waitpid(pid, &status, 0);
		tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
		       "control: a probing library is killed by that filter (status 0x%x)",
		       (unsigned int)status);
	}
	return tap_exit();
}
