/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A seccomp filter that traps membarrier(2) (SECCOMP_RET_TRAP: a SIGSYS,
 * fatal where nothing handles it) must not kill the library's probe.
 * Each scenario re-executes this test under such a filter, installed
 * before the library's constructor runs, with SIGSYS as the scenario
 * says (default, ignored, blocked: each survives exec; or the program's
 * own handler, installed from .preinit_array, before any constructor).
 * The child checks that it is alive, that the library took the kernel
 * for one without membarrier(2) and makes no further call that would
 * trap, and that SIGSYS's disposition and the signal mask are as they
 * were.  A filter that kills instead is tests/fallback's (where only
 * LIBMEMBARRIER_HEAVY=signal|fence can save the process) and
 * tests/info.sh's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "tap.h"
#include "testlib.h"

#ifndef SYS_SECCOMP
# define SYS_SECCOMP 1
#endif

/* The low 32 bits of membarrier(2)'s cmd (the kernel reads no more). */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
# define ARG0_LOW (offsetof(struct seccomp_data, args[0]) + 4)
#else
# define ARG0_LOW offsetof(struct seccomp_data, args[0])
#endif

/* membarrier(2) answers `action` to cmd, `other` to the other commands. */
static int trap_membarrier(int cmd, unsigned int action, unsigned int other)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, LMB_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LOW),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)cmd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, action),
		BPF_STMT(BPF_RET | BPF_K, other),
	};

	return test_install_filter(filter, sizeof(filter) / sizeof(filter[0]), 0);
}

#define TRAP SECCOMP_RET_TRAP
#define ALLOW SECCOMP_RET_ALLOW

static const struct scenario {
	const char *name;
	int cmd;			/* the filter answers action to cmd, */
	unsigned int action, other;	/* other to the other commands */
	const char *disposition;	/* SIGSYS: "default", "ignored", "blocked", "handler" */
	const char *env;		/* LIBMEMBARRIER_HEAVY, or NULL */
	const char *what;
} scenarios[] = {
	{ "query", MEMBARRIER_CMD_QUERY, TRAP, ALLOW, "default", NULL,
	  "QUERY trapped: the kernel taken for one without membarrier(2)" },
	{ "others", MEMBARRIER_CMD_QUERY, ALLOW, TRAP, "default", NULL,
	  "every command but QUERY trapped: the registration's trap counts as QUERY's" },
	{ "barrier", MEMBARRIER_CMD_PRIVATE_EXPEDITED, TRAP, ALLOW, "default", NULL,
	  "only the barrier's command trapped: found at start-up, not at the first barrier" },
	{ "ignored", MEMBARRIER_CMD_QUERY, TRAP, TRAP, "ignored", NULL,
	  "SIGSYS ignored (a trap would reset it and kill): ignored again after" },
	{ "blocked", MEMBARRIER_CMD_QUERY, TRAP, TRAP, "blocked", NULL,
	  "SIGSYS blocked (a trap would unblock it and kill): blocked again after" },
	{ "lazy", MEMBARRIER_CMD_QUERY, TRAP, TRAP, "default", "signal",
	  "LIBMEMBARRIER_HEAVY=signal: the application's first QUERY is guarded too" },
	{ "handler", MEMBARRIER_CMD_QUERY, TRAP, TRAP, "handler", NULL,
	  "the program's own SIGSYS handler is left alone and sees the trap" },
};
#define NSCEN ((int)(sizeof(scenarios) / sizeof(scenarios[0])))

static int failures;


/* The program's own handler ("handler"): counts, answers nothing. */
static volatile sig_atomic_t own_traps, own_code, own_syscall;

static void own_handler(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	own_traps++;
	own_code = si->si_code;
	own_syscall = si->si_syscall;
}

static void install_own_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = own_handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
}

/* Before any constructor, the library's included (glibc passes argv). */
static void preinit(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc == 3 && strcmp(argv[1], "--child") == 0 && strcmp(argv[2], "handler") == 0)
		install_own_handler();
}
__attribute__((section(".preinit_array"), used))
static void (*const preinit_entry)(int, char **, char **) = preinit;

/* SIGSYS's disposition and the mask are what the parent left. */
static void check_signal_state(const char *disposition)
{
	int blocked = strcmp(disposition, "blocked") == 0;
	struct sigaction sa;
	sigset_t mask;

	CHECK(sigaction(SIGSYS, NULL, &sa) == 0, "sigaction");
	if (strcmp(disposition, "handler") == 0)
		CHECK((sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == own_handler,
		      "the program's SIGSYS handler replaced (%p)", (void *)sa.sa_sigaction);
	else if (strcmp(disposition, "ignored") == 0)
		CHECK(sa.sa_handler == SIG_IGN, "SIGSYS no longer ignored (%p)",
		      (void *)sa.sa_handler);
	else
		CHECK(sa.sa_handler == SIG_DFL, "SIGSYS not back to SIG_DFL (%p)",
		      (void *)sa.sa_handler);
	CHECK(sigprocmask(SIG_BLOCK, NULL, &mask) == 0, "sigprocmask");
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&mask, sig) == 1 && !(blocked && sig == SIGSYS))
			CHECK(0, "signal %d blocked after the probe", sig);
	CHECK(sigismember(&mask, SIGSYS) == blocked, "SIGSYS %s after the probe",
	      blocked ? "unblocked" : "blocked");
}

static int child(const struct scenario *s)
{
	int emulated = MEMBARRIER_CMD_PRIVATE_EXPEDITED | MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED;
	int lazy = s->env != NULL;
	struct membarrier_strategy st;

	alarm(60);	/* a hang is a failure */
	if (strcmp(s->disposition, "handler") == 0) {
		/* The library probed in its constructor: the trap was seen. */
		CHECK(own_traps > 0, "the program's handler saw no trap");
		CHECK(own_code == SYS_SECCOMP && own_syscall == SYS_membarrier,
		      "the program's handler saw si_code %d, si_syscall %d",
		      (int)own_code, (int)own_syscall);
		check_signal_state(s->disposition);
		return failures ? EXIT_FAILURE : EXIT_SUCCESS;
	}
	CHECK(membarrier_get_strategy(&st, sizeof(st)) == 0, "strategy");
	CHECK(st.probe_skipped == lazy, "probe_skipped %d", st.probe_skipped);
	CHECK(st.kernel_errno == (lazy ? 0 : ENOSYS), "kernel errno %d", st.kernel_errno);
	CHECK(st.heavy == MEMBARRIER_MECHANISM_SIGNAL, "heavy is %s",
	      membarrier_mechanism_name(st.heavy));
	CHECK((st.emulated_commands & emulated) == emulated, "emulated 0x%x",
	      (unsigned int)st.emulated_commands);
	/* The emulated commands only: the kernel is taken to have none. */
	CHECK(membarrier(MEMBARRIER_CMD_QUERY, 0, 0) == st.emulated_commands,
	      "QUERY: %d (%s)", membarrier(MEMBARRIER_CMD_QUERY, 0, 0), strerror(errno));
	if (lazy) {
		CHECK(membarrier_get_strategy(&st, sizeof(st)) == 0 && st.kernel_errno == ENOSYS,
		      "kernel errno %d after the application's QUERY", st.kernel_errno);
	} else {
		/* No system call, no trap: the cached ENOSYS. */
		CHECK(membarrier(MEMBARRIER_CMD_GLOBAL, 0, 0) == -1 && errno == ENOSYS,
		      "GLOBAL: %s", strerror(errno));
		CHECK(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) == -1 &&
		      errno == ENOSYS, "PRIVATE_EXPEDITED_RSEQ: %s", strerror(errno));
	}
	CHECK(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0,
	      "emulated REGISTER_PRIVATE_EXPEDITED");
	CHECK(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0,
	      "emulated PRIVATE_EXPEDITED");
	CHECK(membarrier_heavy() == 0, "heavy");
	check_signal_state(s->disposition);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* In the forked child: SIGSYS as the scenario says, the filter, exec. */
static void start(const char *argv0, const struct scenario *s)
{
	struct rlimit no_core = { 0, 0 };
	struct sigaction sa;
	sigset_t mask;

	setrlimit(RLIMIT_CORE, &no_core);	/* a death by SIGSYS dumps none */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = strcmp(s->disposition, "ignored") == 0 ? SIG_IGN : SIG_DFL;
	sigaction(SIGSYS, &sa, NULL);
	sigemptyset(&mask);
	if (strcmp(s->disposition, "blocked") == 0)
		sigaddset(&mask, SIGSYS);
	sigprocmask(SIG_SETMASK, &mask, NULL);
	if (s->env != NULL)
		setenv("LIBMEMBARRIER_HEAVY", s->env, 1);
	else
		unsetenv("LIBMEMBARRIER_HEAVY");
	if (trap_membarrier(s->cmd, s->action, s->other) != 0)
		_exit(98);
	test_reexec(argv0, "--child", s->name);
	_exit(97);
}

static int run(const char *argv0, const struct scenario *s)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		start(argv0, s);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		tap_bail("fork: %s", strerror(errno));
	return status;
}

int main(int argc, char **argv)
{
	int status;

	if (argc == 3 && strcmp(argv[1], "--child") == 0) {
		for (int i = 0; i < NSCEN; i++)
			if (strcmp(argv[2], scenarios[i].name) == 0)
				return child(&scenarios[i]);
		if (strcmp(argv[2], "control") == 0)
			return raw_membarrier(MEMBARRIER_CMD_QUERY, 0, 0) >= 0 ? 0 : 1;
		return 2;
	}
	if (!test_seccomp_works()) {
		if (test_emulator() == NULL)
			tap_bail("seccomp filters do not work on this host");
		printf("1..0 # SKIP %s\n", TEST_NO_SECCOMP);
		return 0;
	}
	tap_plan(NSCEN + 1);
	for (int i = 0; i < NSCEN; i++) {
		status = run(argv[0], &scenarios[i]);
		tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s (status 0x%x%s)",
		       scenarios[i].what, (unsigned int)status,
		       WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS ? ": killed by SIGSYS" : "");
	}
	/*
	 * The control: the filter traps, and the library's handler is gone
	 * once it has probed: the program's own membarrier(2) is killed.
	 */
	{
		static const struct scenario control = {
			"control", MEMBARRIER_CMD_QUERY, TRAP, TRAP, "default", NULL, NULL
		};

		status = run(argv[0], &control);
		tap_ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
		       "control: after the probe, a trapped membarrier(2) of the program's "
		       "own kills (status 0x%x)", (unsigned int)status);
	}
	return tap_exit();
}
