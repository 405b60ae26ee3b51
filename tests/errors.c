/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bad input: each invalid cmd, flags or cpu_id gives -1 and the errno that
 * membarrier(2) documents, and the library agrees with the kernel on every
 * input it passes through.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "tap.h"
#include "testlib.h"

struct bad {
	int cmd;
	unsigned int flags;
	int cpu_id;
	const char *what;
};

static const struct bad table[] = {
	{ -1, 0, 0, "cmd -1" },
	{ INT_MIN, 0, 0, "cmd INT_MIN" },
	{ 3, 0, 0, "cmd with two bits" },
	{ 1 << 11, 0, 0, "cmd 1 << 11 (unknown)" },
	{ 1 << 30, 0, 0, "cmd 1 << 30 (unknown)" },
	{ MEMBARRIER_CMD_QUERY, 1, 0, "QUERY with flags 1" },
	{ MEMBARRIER_CMD_QUERY, ~0u, 0, "QUERY with flags ~0" },
	{ MEMBARRIER_CMD_GLOBAL, 1, 0, "GLOBAL with flags 1" },
	{ MEMBARRIER_CMD_GLOBAL_EXPEDITED, 1, 0, "GLOBAL_EXPEDITED with flags 1" },
	{ MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 1, 0, "REGISTER_GLOBAL_EXPEDITED with flags 1" },
	{ MEMBARRIER_CMD_PRIVATE_EXPEDITED, 1, 0, "PRIVATE_EXPEDITED with flags 1" },
	{ MEMBARRIER_CMD_PRIVATE_EXPEDITED, MEMBARRIER_CMD_FLAG_CPU, 0,
	  "PRIVATE_EXPEDITED with MEMBARRIER_CMD_FLAG_CPU" },
	{ MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 1, 0, "REGISTER_PRIVATE_EXPEDITED with flags 1" },
	{ MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 1, 0, "SYNC_CORE with flags 1" },
	{ MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 2, 0, "RSEQ with flags 2" },
	{ MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, ~0u, 0, "RSEQ with flags ~0" },
	{ MEMBARRIER_CMD_GET_REGISTRATIONS, 1, 0, "GET_REGISTRATIONS with flags 1" },
	{ MEMBARRIER_CMD_SHARED_EXPEDITED, 1, 0, "SHARED_EXPEDITED with flags 1" },
};
#define NBAD ((int)(sizeof(table) / sizeof(table[0])))

static const unsigned int fuzz_flags[] = { 0, 1, 2, 3, 0x80000000u, ~0u };

int main(void)
{
	int kmask = raw_membarrier(MEMBARRIER_CMD_QUERY, 0, 0);
	int agree = 1, checked = 0;

	if (kmask < 0)
		tap_bail("this kernel has no membarrier (%s)", strerror(-kmask));
	tap_plan(NBAD + 3);

	for (int i = 0; i < NBAD; i++) {
		const struct bad *b = &table[i];
		int ret;

		errno = 0;
		ret = membarrier(b->cmd, b->flags, b->cpu_id);
		tap_ok(ret == -1 && errno == EINVAL, "%s: -1 EINVAL (got %d, %s)",
		       b->what, ret, strerror(errno));
	}

	/*
	 * Every command value from -2 to 1 << 12 with odd flags: the library
	 * answers as the kernel does (commands the kernel lacks get EINVAL
	 * from the library's cache, and the kernel says the same).
	 */
	for (int cmd = -2; cmd <= (1 << 12); cmd++) {
		for (size_t f = 0; f < sizeof(fuzz_flags) / sizeof(fuzz_flags[0]); f++) {
			unsigned int flags = fuzz_flags[f];
			int lib, lib_errno, raw;

			/* Valid calls with flags 0 are tested elsewhere (GLOBAL is slow). */
			if (flags == 0 && cmd >= 0 && (cmd & (cmd - 1)) == 0 &&
			    (cmd == 0 || (kmask & cmd)))
				continue;
			/* RSEQ accepts FLAG_CPU: a valid call. */
			if (cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ &&
			    flags == MEMBARRIER_CMD_FLAG_CPU)
				continue;
			errno = 0;
			lib = membarrier(cmd, flags, 0);
			lib_errno = errno;
			raw = raw_membarrier(cmd, flags, 0);
			checked++;
			if (!(lib == -1 && raw == -lib_errno)) {
				if (agree)
					tap_diag("cmd 0x%x flags 0x%x: library %d/%s, kernel %d",
						 (unsigned int)cmd, flags, lib,
						 strerror(lib_errno), raw);
				agree = 0;
			}
		}
	}
	tap_ok(agree, "library and kernel give the same error on %d bad calls", checked);

	/* cpu_id is ignored without MEMBARRIER_CMD_FLAG_CPU. */
	tap_ok(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, -12345) == 0 ||
	       !(membarrier(MEMBARRIER_CMD_QUERY, 0, 0) & MEMBARRIER_CMD_PRIVATE_EXPEDITED),
	       "cpu_id ignored without MEMBARRIER_CMD_FLAG_CPU");

	if (kmask & MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) {
		int same = 1;
		static const int cpus[] = { -1, 0, 1, 4095, 4096, INT_MAX, INT_MIN };

		for (size_t i = 0; i < sizeof(cpus) / sizeof(cpus[0]); i++) {
			int lib, lib_errno, raw;

			errno = 0;
			lib = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
					 MEMBARRIER_CMD_FLAG_CPU, cpus[i]);
			lib_errno = errno;
			raw = raw_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
					     MEMBARRIER_CMD_FLAG_CPU, cpus[i]);
			if (lib != (raw < 0 ? -1 : raw) || (raw < 0 && -raw != lib_errno)) {
				tap_diag("RSEQ FLAG_CPU cpu %d: library %d/%s, kernel %d",
					 cpus[i], lib, strerror(lib_errno), raw);
				same = 0;
			}
		}
		tap_ok(same, "RSEQ with MEMBARRIER_CMD_FLAG_CPU: library = kernel for odd cpu_id");
	} else {
		tap_ok(1, "# SKIP kernel lacks PRIVATE_EXPEDITED_RSEQ");
	}
	return tap_exit();
}
