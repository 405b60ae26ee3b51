/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * membarrier-info: what membarrier(2) offers on this machine, and what
 * libmembarrier makes of it.  See membarrier-info(1).
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "membarrier.h"

static const struct {
	int cmd;
	const char *name;
} commands[] = {
	{ MEMBARRIER_CMD_GLOBAL, "MEMBARRIER_CMD_GLOBAL" },
	{ MEMBARRIER_CMD_GLOBAL_EXPEDITED, "MEMBARRIER_CMD_GLOBAL_EXPEDITED" },
	{ MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, "MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED" },
	{ MEMBARRIER_CMD_PRIVATE_EXPEDITED, "MEMBARRIER_CMD_PRIVATE_EXPEDITED" },
	{ MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, "MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED" },
	{ MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, "MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE" },
	{ MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE,
	  "MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE" },
	{ MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, "MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ" },
	{ MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ,
	  "MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ" },
	{ MEMBARRIER_CMD_GET_REGISTRATIONS, "MEMBARRIER_CMD_GET_REGISTRATIONS" },
	{ MEMBARRIER_CMD_SHARED_EXPEDITED, "MEMBARRIER_CMD_SHARED_EXPEDITED" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_mask(const char *title, int mask)
{
	int known = 0;

	printf("%s (0x%x):\n", title, (unsigned int)mask);
	if (mask == 0)
		printf("  (none)\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (mask & commands[i].cmd) {
			printf("  %s\n", commands[i].name);
			known |= commands[i].cmd;
		}
	}
	if (mask & ~known)
		printf("  unknown bits 0x%x\n", (unsigned int)(mask & ~known));
}

/*
 * The mechanism LIBMEMBARRIER_HEAVY asks for, read as the library reads it
 * (secure_getenv: ignored in secure-execution mode), or 0 when it asks for
 * none: unset, empty, "auto", or an unknown name (which the library reports
 * in environment_invalid).
 */
static int requested_mechanism(void)
{
	const char *env = secure_getenv("LIBMEMBARRIER_HEAVY");

	if (env == NULL)
		return 0;
	for (int m = MEMBARRIER_MECHANISM_PRIVATE_EXPEDITED; m <= MEMBARRIER_MECHANISM_FENCE; m++) {
		const char *name = membarrier_mechanism_name(m);

		if (name != NULL && strcmp(env, name) == 0)
			return m;
	}
	return 0;
}

/*
 * Why the library passed over MEMBARRIER_CMD_PRIVATE_EXPEDITED on riscv64
 * (libmembarrier/mechanism.c): before the full barrier in switch_mm()
 * (Linux 6.9, 6.6.51) it was no process-wide barrier there.  NULL where
 * that is not the reason.
 */
static const char *expedited_unsafe(struct utsname *u)
{
#if defined(__riscv)
	long v[3] = { 0, 0, 0 };
	char *p;

	if (uname(u) != 0)
		return NULL;
	p = u->release;
	for (int i = 0; i < 3; i++) {
		v[i] = strtol(p, &p, 10);
		if (*p++ != '.')
			break;
	}
	if (v[0] > 6 || (v[0] == 6 && v[1] >= 9) || (v[0] == 6 && v[1] == 6 && v[2] >= 51))
		return NULL;
	return "its switch_mm() lacks the full barrier of Linux 6.9 and 6.6.51 on riscv64";
#else
	(void)u;
	return NULL;
#endif
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: membarrier-info [--help] [--version]\n"
		"Print the membarrier(2) commands the kernel offers, those libmembarrier\n"
		"emulates, this process's registrations and the heavy/light strategy.\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct membarrier_strategy st;
	struct utsname uts;
	const char *name, *why;
	int opt, regs, requested;

	while ((opt = getopt_long(argc, argv, "hV", options, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout);
			return EXIT_SUCCESS;
		case 'V':
			printf("membarrier-info (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
			return EXIT_SUCCESS;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "membarrier-info: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	if (membarrier_get_strategy(&st, sizeof(st)) != 0) {
		fprintf(stderr, "membarrier-info: membarrier_get_strategy: %s\n", strerror(errno));
		return EXIT_FAILURE;
	}

	requested = requested_mechanism();

	/*
	 * With LIBMEMBARRIER_HEAVY=signal or fence the library makes no
	 * membarrier(2) call at start-up, and neither may we (the variable is
	 * meant for filters that kill the process on it): the kernel's
	 * commands are unknown, not absent.  The line names what was asked
	 * for, which is why the kernel was not asked, not what was chosen.
	 */
	if (st.probe_skipped) {
		printf("Kernel: not asked (LIBMEMBARRIER_HEAVY=%s)\n",
		       requested ? membarrier_mechanism_name(requested) : "?");
	} else {
		if (st.kernel_errno)
			printf("Kernel: membarrier(MEMBARRIER_CMD_QUERY) failed: %s (%s)\n",
			       strerror(st.kernel_errno),
			       st.kernel_errno == ENOSYS ? "no membarrier, or a sandbox refuses it" :
			       st.kernel_errno == EPERM ? "a sandbox refuses membarrier" :
			       "unexpected");
		print_mask("Kernel commands (MEMBARRIER_CMD_QUERY)", st.kernel_commands);
	}
	print_mask("Emulated by libmembarrier", st.emulated_commands);

	if (st.kernel_commands & MEMBARRIER_CMD_GET_REGISTRATIONS) {
		regs = membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0, 0);
		if (regs < 0)
			printf("Registrations: MEMBARRIER_CMD_GET_REGISTRATIONS failed: %s\n",
			       strerror(errno));
		else
			print_mask("Registrations of this process (MEMBARRIER_CMD_GET_REGISTRATIONS)",
				   regs);
	} else if (st.probe_skipped || st.kernel_errno) {
		printf("Registrations: none (the library does not use the kernel)\n");
	} else {
		print_mask("Registrations made by libmembarrier (the kernel cannot list them)",
			   st.library_registrations);
	}

	if (requested)
		printf("Requested: %s (LIBMEMBARRIER_HEAVY)\n",
		       membarrier_mechanism_name(requested));
	name = membarrier_mechanism_name(st.heavy);
	printf("Heavy barrier: %s", name ? name : "unknown");
	if (st.heavy == MEMBARRIER_MECHANISM_SIGNAL)
		printf(" (signal %d)", st.signal);
	if (requested && requested != st.heavy)
		printf(" (%s is not available here)", membarrier_mechanism_name(requested));
	if (st.heavy != MEMBARRIER_MECHANISM_PRIVATE_EXPEDITED &&
	    (st.kernel_commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    (why = expedited_unsafe(&uts)) != NULL)
		printf("\nNot used: MEMBARRIER_CMD_PRIVATE_EXPEDITED (Linux %s: %s)", uts.release,
		       why);
	printf("\nLight barrier: %s\n",
	       st.light_is_fence ? "full fence (no process-wide barrier available)"
				 : "compiler barrier");
	if (st.environment_invalid)
		printf("Warning: LIBMEMBARRIER_HEAVY='%s' is not a known mechanism; ignored\n",
		       getenv("LIBMEMBARRIER_HEAVY"));
	return EXIT_SUCCESS;
}
